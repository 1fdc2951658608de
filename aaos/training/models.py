"""Models for the example scripts: a pretrained causal LM by id or path, or a tiny one built offline.

The tiny model is randomly initialised and its tokenizer trained locally, for smoke runs with no download.
The tokenizer is a byte-level BPE trained on the dataset's own texts, wrapped as a PreTrainedTokenizerFast
with TRL's Qwen2.5 chat template (which renders tools, so GRPOTrainer accepts it with an environment_factory
and knows how to parse tool calls). The model is a two-layer Qwen2 built from a config. It learns nothing
useful; it exercises TRL's real code path on CPU in seconds.

Needs the `train` extra (torch, transformers, tokenizers, trl).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    PreTrainedTokenizerFast,
    Qwen2Config,
    Qwen2ForCausalLM,
)
from trl.chat_template_utils import qwen2_5_chat_template

PAD, START, END = "<|endoftext|>", "<|im_start|>", "<|im_end|>"
SPECIAL_TOKENS = [PAD, START, END, "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]
MAX_POSITIONS = 8192
"""Positions the model accepts: a per-role prompt is ~1,000 tokens with this tokenizer, a joint one ~5,000."""


def row_texts(rows: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    """Every message content of SFT (`messages`) or GRPO (`prompt`) rows: the tokenizer's training text."""
    for row in rows:
        for message in row.get("messages") or row.get("prompt") or []:
            yield message["content"]


def train_tokenizer(texts: Iterable[str], vocab_size: int = 2048) -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer trained on `texts`, with the chat special tokens and template."""
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    core.train_from_iterator(texts, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, eos_token=END, pad_token=PAD, padding_side="left")
    tokenizer.chat_template = qwen2_5_chat_template
    return tokenizer


def tiny_model(tokenizer: PreTrainedTokenizerFast, seed: int = 0, hidden_size: int = 64,
               layers: int = 2) -> Qwen2ForCausalLM:
    """A randomly initialised Qwen2 causal LM sized for `tokenizer`; the same seed gives the same weights."""
    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=2 * hidden_size,
                         num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=MAX_POSITIONS, tie_word_embeddings=True,
                         bos_token_id=tokenizer.convert_tokens_to_ids(START),
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


def load(model: str | None, rows: Iterable[Mapping[str, Any]], seed: int = 0
         ) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """The model and tokenizer at `model` (a hub id or a saved directory), or a tiny pair built from the rows'
    texts when `model` is None. A tokenizer without a pad token pads with its end-of-sequence token."""
    if model is None:
        tokenizer = train_tokenizer(row_texts(rows))
        return tiny_model(tokenizer, seed), tokenizer
    tokenizer = AutoTokenizer.from_pretrained(model)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return AutoModelForCausalLM.from_pretrained(model), tokenizer


def train_and_save(trainer: Any, tokenizer: PreTrainedTokenizerFast, out: str) -> None:
    """Run a TRL trainer, keep its logged losses and rewards (trainer_state.json), save model and tokenizer."""
    trainer.train()
    trainer.save_state()
    trainer.save_model(out)
    tokenizer.save_pretrained(out)
    print(f"saved to {out}")
