"""Supervised fine-tuning on the AAOS SFT dataset with TRL's SFTTrainer.

    aaos sft runs/train/episodes.jsonl --out runs/train/sft.jsonl
    python examples/sft.py --max-steps 2                                 # smoke: tiny offline model, CPU
    python examples/sft.py --model Qwen/Qwen2.5-0.5B-Instruct            # a real model (downloads it)

Without --model it trains a tiny random Qwen2 with a tokenizer trained on the data (no download), which is
what the smoke run uses. The loss is on the assistant turns only (the action the agent should give). The
model and tokenizer are saved to --out, ready for examples/grpo.py --model. Needs `pip install -e '.[train]'`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import torch
from datasets import load_dataset
from trl import SFTConfig, SFTTrainer

from aaos.training.models import load, train_and_save


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="runs/train/sft.jsonl", help="rows from `aaos sft`")
    parser.add_argument("--model", help="hub id or saved directory (default: a tiny model built offline)")
    parser.add_argument("--out", default="runs/train/sft-model", help="where the trained model is saved")
    parser.add_argument("--max-steps", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--learning-rate", type=float, default=2e-5)
    parser.add_argument("--max-length", type=int, default=2048, help="tokens per row; longer rows are cut")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    dataset = load_dataset("json", data_files=args.data, split="train")
    model, tokenizer = load(args.model, dataset, args.seed)
    config = SFTConfig(output_dir=args.out, max_steps=args.max_steps, per_device_train_batch_size=args.batch_size,
                       learning_rate=args.learning_rate, max_length=args.max_length, assistant_only_loss=True,
                       logging_steps=10, save_strategy="no", report_to="none", seed=args.seed,
                       use_cpu=not torch.cuda.is_available())
    trainer = SFTTrainer(model=model, args=config, train_dataset=dataset, processing_class=tokenizer)
    train_and_save(trainer, tokenizer, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
