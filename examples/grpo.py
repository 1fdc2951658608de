"""GRPO on the AAOS GRPO dataset with TRL's GRPOTrainer, rewarded by stepping the environment.

    aaos grpo-data runs/train/episodes.jsonl --out runs/train/grpo.jsonl
    python examples/grpo.py --model runs/train/sft-model                 # after examples/sft.py
    python examples/grpo.py --model runs/train/sft-model --environment   # tool-calling rollouts
    python examples/grpo.py --model runs/train/sft-model --max-steps 2 --batch-size 2 --num-generations 2 \
        --max-completion-length 16                                       # smoke: two steps on CPU

Each completion is scored by aaos.training.reward_fn: the environment is restored from the row's snapshot,
stepped with the completion's action (the champion plays the other roles) and the score read `horizon` steps
later; an answer that is not a valid action gets INVALID_REWARD. With --environment the model acts through
tool calls in aaos.training.environment_class(env) instead (one method per action type) and the environment scores
the rollout; the model's chat template must render tools (Qwen2.5's does; so does the tiny model's).

Without --model it builds a tiny random Qwen2 and a tokenizer from the data (no download): a smoke run.
Needs `pip install -e '.[train]'`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import torch
from datasets import load_dataset
from trl import GRPOConfig, GRPOTrainer

from aaos.training import environment_class, reward_fn
from aaos.training.models import load, train_and_save


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="runs/train/grpo.jsonl", help="rows from `aaos grpo-data`")
    parser.add_argument("--model", help="hub id or saved directory (default: a tiny model built offline)")
    parser.add_argument("--out", default="runs/train/grpo-model", help="where the trained model is saved")
    parser.add_argument("--environment", action="store_true",
                        help="act through the tools of the rows' environment (aaos.training.environment_class) "
                             "instead of answering with one JSON action")
    parser.add_argument("--max-steps", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=8, help="completions per step")
    parser.add_argument("--num-generations", type=int, default=4, help="completions per prompt (a GRPO group)")
    parser.add_argument("--max-completion-length", type=int, default=64, help="a JSON action is ~20-60 tokens")
    parser.add_argument("--learning-rate", type=float, default=1e-6)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    dataset = load_dataset("json", data_files=args.data, split="train").shuffle(seed=args.seed)
    model, tokenizer = load(args.model, dataset, args.seed)
    config = GRPOConfig(output_dir=args.out, max_steps=args.max_steps, per_device_train_batch_size=args.batch_size,
                        num_generations=args.num_generations, max_completion_length=args.max_completion_length,
                        learning_rate=args.learning_rate, logging_steps=1, save_strategy="no", report_to="none",
                        seed=args.seed, use_cpu=not torch.cuda.is_available())
    tools = environment_class(dataset[0]["env"])  # every row of `aaos grpo-data` names its environment
    rewards = {"environment_factory": tools} if args.environment else {"reward_funcs": reward_fn}
    trainer = GRPOTrainer(model=model, args=config, train_dataset=dataset, processing_class=tokenizer, **rewards)
    train_and_save(trainer, tokenizer, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
