"""How long the Space's local agent takes to play a 20-step org_simulation episode on this machine.

    python perf/local_episode.py [--adapter runs/train/org-cpu/grpo.gguf] [--env org] [--task org_simulation]

Plays the same holdout episode with the local SmolLM2 fine-tuned for the environment (its shipped adapter, or
--adapter, in compact mode) and with the untrained model in per-role mode (what the Space's local agent was before `aaos
train`), one after the other, each through the LLM agent on its own llama.cpp server (started and warmed by one
call first, not timed), and prints the seconds per episode and per step, the model calls and tokens, and the
ratio. The goal: a 20-step episode within 60 s on 2 cores.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import aaos
from aaos.agents.llm import LLMConfig, LLMPolicy
from aaos.agents.local_model import local_config, shared_server, trained_adapter

GOAL_S = 60.0


def play(env_id: str, task: str, scenario: str, seed: int, config: LLMConfig) -> tuple[float, dict[str, object]]:
    env = aaos.make(task, scenario=scenario, seed=seed, env=env_id)
    policy = LLMPolicy(env.spec, config)
    observation = env.reset()
    policy.act(observation)  # warms the server: loads the weights, fills the prompt cache's system prefix
    policy.stats = type(policy.stats)()
    started = time.perf_counter()
    try:
        while True:
            result = env.step(policy.act(observation))
            observation = result.observation
            if result.done:
                break
    finally:
        policy.close()
    return time.perf_counter() - started, {**policy.stats.to_dict(), "steps": result.info["step"],
                                           "score": result.info["score"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="org")
    parser.add_argument("--task", default="org_simulation")
    parser.add_argument("--scenario", default="compliance_audit_crunch")
    parser.add_argument("--seed", type=int, default=10000)
    parser.add_argument("--adapter", type=Path, help="a GGUF LoRA adapter (default: the one shipped for --env)")
    args = parser.parse_args()
    adapter = args.adapter or trained_adapter(args.env)
    if adapter is None:
        raise SystemExit(f"no adapter shipped for {args.env}: give --adapter (aaos train writes them)")
    runs = {"fine-tuned, compact": shared_server(adapter).config("compact"),
            "untrained, per role": local_config(args.env, "per_role", trained=False)}
    timed = {}
    for name, config in runs.items():
        seconds, stats = play(args.env, args.task, args.scenario, args.seed, config)
        timed[name] = seconds
        steps = int(stats["steps"])  # type: ignore[call-overload]
        print(f"{name:<22} {seconds:6.1f} s  ({seconds / steps:.2f} s/step, {steps} steps)  calls {stats['calls']}  "
              f"tokens {stats['prompt_tokens']} in / {stats['completion_tokens']} out  score {stats['score']:.3f}  "
              f"own decisions {stats['decisions']}", flush=True)
    fine, untrained = timed.values()
    print(f"fine-tuned / untrained time: {fine / untrained:.2f}x; goal {GOAL_S:.0f} s per episode: "
          f"{'met' if fine <= GOAL_S else 'missed'} ({fine:.1f} s)")


if __name__ == "__main__":
    main()
