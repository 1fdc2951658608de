"""Fine-tuning with the loss weighted toward the tokens that decide an answer.

An answer such as `["classify_email(em_d949e6,account)"]` is some twenty tokens, of which one decides the step
(the category); the rest are copied from the prompt and are fitted within a few steps. With the loss averaged over
every answer token, that one token is a twentieth of the signal, and a small model learns the categories' base
rates instead of reading the email (docs/training.md). Here each answer token weighs 1, except those holding a
decision character of the row (`decision_chars`, aaos.training.decisions.decision_chars: where the calls the
agent's decoding admits branch), which weigh `decision_weight`; prompt tokens weigh 0. A row's loss is its
weighted mean token loss, so every row counts alike whatever its length.

The loop is plain PyTorch over a peft model: AdamW, a linear warm-up over a tenth of the steps then a cosine
decay, `grad_accumulation` rows an optimizer step, rows drawn in a seeded shuffled order (reshuffled each pass).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar


@dataclass(frozen=True)
class Encoded:
    """One row as the model reads it: token ids and each token's loss weight (0 for the prompt)."""

    input_ids: list[int]
    weights: list[float]


Item = TypeVar("Item")


def encode(tokenizer: Any, messages: list[dict[str, str]], decision_chars: Sequence[int], decision_weight: float,
           max_length: int) -> Encoded:
    """The row's tokens (the chat template's prompt, then its answer turn) and their weights (module docstring);
    truncated to max_length tokens."""
    prompt = tokenizer.apply_chat_template(messages[:-1], add_generation_prompt=True, tokenize=False)
    whole = tokenizer.apply_chat_template(messages, tokenize=False)
    if not whole.startswith(prompt):
        raise ValueError("the chat template does not write the prompt as a prefix of the whole chat")
    answer = whole[len(prompt):]
    content_at = answer.index(messages[-1]["content"])
    decided = {content_at + i for i in decision_chars}
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    tokens = tokenizer(answer, add_special_tokens=False, return_offsets_mapping=True)
    weights = [decision_weight if any(i in decided for i in range(start, end)) else 1.0
               for start, end in tokens["offset_mapping"]]
    ids = [*prompt_ids, *tokens["input_ids"]][:max_length]
    return Encoded(ids, ([0.0] * len(prompt_ids) + weights)[:max_length])


def token_losses(model: Any, row: Encoded) -> Any:
    """The next-token loss of each of the row's tokens after the first (a tensor)."""
    import torch

    ids = torch.tensor([row.input_ids], device=model.device)
    logits = model(input_ids=ids).logits[0, :-1].float()
    return torch.nn.functional.cross_entropy(logits, ids[0, 1:], reduction="none")


def weighted_mean(losses: Any, row: Encoded) -> Any:
    """The row's weighted mean of its token losses (token_losses)."""
    import torch

    weights = torch.tensor(row.weights[1:], device=losses.device)
    return (losses * weights).sum() / weights.sum().clamp_min(1e-9)


def row_loss(model: Any, row: Encoded) -> Any:
    """The row's weighted mean next-token loss (a scalar tensor)."""
    return weighted_mean(token_losses(model, row), row)


def schedule(step: int, steps: int) -> float:
    """The learning rate's factor at optimizer step `step` of `steps`: linear warm-up, then cosine decay."""
    warmup = max(1, steps // 10)
    if step < warmup:
        return (step + 1) / warmup
    return 0.5 * (1.0 + math.cos(math.pi * (step - warmup) / max(1, steps - warmup)))


def fit(model: Any, rows: Sequence[Item], steps: int, grad_accumulation: int, learning_rate: float, seed: int,
        loss_of: Callable[[Any, Item], Any] = row_loss) -> list[dict[str, float]]:
    """Train the model's trainable parameters for `steps` optimizer steps (module docstring) on the loss `loss_of`
    gives each row (row_loss: the SFT row's; aaos.training.dpo: a preference pair's); the log, one entry a step:
    step, loss (the mean row loss of the step), learning_rate."""
    import torch

    if not rows:
        raise ValueError("no row to train on")
    torch.manual_seed(seed)
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=learning_rate, weight_decay=0.0)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: schedule(step, steps))
    order: list[int] = []
    shuffler = random.Random(seed)
    model.train()
    log: list[dict[str, float]] = []
    for step in range(steps):
        total = 0.0
        for _ in range(grad_accumulation):
            if not order:
                order = list(range(len(rows)))
                shuffler.shuffle(order)
            loss = loss_of(model, rows[order.pop()]) / grad_accumulation
            loss.backward()
            total += float(loss.detach())
        torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        log.append({"step": step + 1, "loss": round(total, 6), "learning_rate": scheduler.get_last_lr()[0]})
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
    model.eval()
    return log
