"""`aaos replay`, `aaos collect`, `aaos sft`, `aaos grpo-data`, `aaos train-q` and `aaos train`: the training
bridge on the command line.

`add_parsers(sub)` registers the six commands on the `aaos` command's subparsers.
"""

from __future__ import annotations

import argparse
import itertools
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import aaos
from aaos.core.extras import require_extra
from aaos.core.seeding import split_seeds
from aaos.core.trajectory import EpisodeMeta, write_jsonl
from aaos.policies import DEFAULT_BASE_URL, POLICY_NAMES, PolicySpec, build_policy, policy_spec
from aaos.training.decisions import MODES
from aaos.training.episodes import Record, play, read_episodes
from aaos.training.grpo import grpo_rows
from aaos.training.presets import PRESETS, overridden
from aaos.training.qlearn import Settings, train
from aaos.training.replay import check
from aaos.training.rollout import DEFAULT_HORIZON
from aaos.training.sft import DEFAULT_MIN_SCORE, kept, sft_rows


def _episodes(spec: PolicySpec, metas: Iterable[EpisodeMeta]) -> Iterator[list[Record]]:
    """Play each episode with a fresh policy, reporting its score as it finishes."""
    for meta in metas:
        policy = build_policy(spec, meta.env, meta.seed)
        try:
            records = play(meta, policy)
        finally:
            policy.close()
        print(f"{meta.task:<18} {meta.scenario:<26} seed {meta.seed:<5} steps {len(records):>3}  "
              f"score {records[-1]['score']:.3f}", flush=True)
        yield records


def _collect(args: argparse.Namespace) -> int:
    spec = policy_spec(args.policy, args.model, args.base_url, args.mode, args.response_format, env=args.env)
    tasks = args.task or [t["id"] for t in aaos.list_tasks(args.env)]
    scenarios = args.scenario or [s["id"] for s in aaos.list_scenarios("train", env=args.env)]
    metas = [EpisodeMeta(args.env, task, scenario, seed) for task in tasks for scenario in scenarios
             for seed in split_seeds("train", args.episodes)]
    write_jsonl(itertools.chain.from_iterable(_episodes(spec, metas)), args.out)
    print(f"{len(metas)} episodes of {spec.name} -> {args.out}")
    return 0


def _replay(args: argparse.Namespace) -> int:
    diverged = total = 0
    for path in args.files:
        for episode in read_episodes([path], args.env):
            total += 1
            first = episode[0]
            name = f"{path}: {first['task']}/{first['scenario']} seed {first['seed']}, {len(episode)} steps"
            divergences = check(episode)
            if divergences:
                diverged += 1
                print(f"DIVERGED {name}")
                for divergence in divergences:
                    print(f"  {divergence}")
            else:
                print(f"exact    {name}")
    print(f"{total - diverged} of {total} episodes replay exactly")
    return 1 if diverged else 0


def _write_rows(rows: Iterable[dict[str, Any]], out: Path) -> int:
    """Write the rows as JSONL (to a .partial file first, renamed once complete); returns how many."""
    count = 0

    def counted() -> Iterator[dict[str, Any]]:
        nonlocal count
        for row in rows:
            count += 1
            yield row

    partial = write_jsonl(counted(), out.with_name(out.name + ".partial"))
    partial.replace(out)
    return count


def _sft(args: argparse.Namespace) -> int:
    episodes = read_episodes(args.files, args.env)
    count = _write_rows(sft_rows(episodes, args.mode, args.min_score), args.out)
    used = sum(kept(episode, args.min_score) for episode in episodes)
    print(f"{count} rows from {used} of {len(episodes)} episodes (finished, score >= {args.min_score}) -> {args.out}")
    return 0


def _grpo_data(args: argparse.Namespace) -> int:
    episodes = read_episodes(args.files, args.env)
    count = _write_rows(grpo_rows(episodes, args.mode, args.horizon), args.out)
    print(f"{count} prompts from {len(episodes)} episodes (horizon {args.horizon or 'the default'}) -> {args.out}")
    return 0


def _train_q(args: argparse.Namespace) -> int:
    tasks = tuple(args.task or [t["id"] for t in aaos.list_tasks(args.env)])
    scenarios = tuple(args.scenario or [s["id"] for s in aaos.list_scenarios("train", env=args.env)])
    settings = Settings(args.env, args.episodes, args.seed, tasks, scenarios, args.checkpoints, args.holdout_seeds)

    def progress(row: dict[str, Any]) -> None:
        if row["holdout_score"] is not None:
            print(f"episode {row['episode']:>5}  return {row['return']:.3f}  epsilon {row['epsilon']:.3f}  "
                  f"holdout {row['holdout_score']:.3f}", flush=True)

    summary = train(settings, args.out, progress)
    print(f"{summary['states']} states; final holdout score {summary['final_holdout_score']:.3f} -> "
          f"{args.out / 'qtable.json'}, curve.csv, summary.json")
    print(f"gate it: aaos bench --env {args.env} --policies heuristic,random,q:{args.out / 'qtable.json'} "
          "--candidate q --split holdout")
    return 0


def _train(args: argparse.Namespace) -> int:
    label, preset = overridden(args.preset, args.overrides)
    require_extra("train")
    from aaos.training.pipeline import Run, publish, train

    task = args.task or aaos.spec(args.env).default_task
    run_ = Run(args.out, args.env, task, label, preset, args.seed)
    summary = train(run_)
    if args.results is not None:
        publish(run_, args.results)
    for row in summary["holdout"]:
        valid = "" if row["valid_action_rate"] is None else f"  valid actions {100 * row['valid_action_rate']:.1f} %"
        print(f"{row['policy']:<10} holdout {row['mean_score']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"
              f"{valid}")
    print(f"beats the untrained model (CIs apart): {summary['beats_untrained']}; gate against the champion: "
          f"{summary['gate_vs_champion']['verdict']}; {args.out / 'summary.json'}, eval.csv, plots/"
          + (f"; published to {args.results}" if args.results is not None else ""))
    return 0


def _mode_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mode", choices=MODES, default="per_role",
                        help="per_role: one chat per role from its own view (default); joint: one chat for all "
                             "roles; compact: joint in a short prompt (what aaos train uses)")


def _env_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--env", help="only episodes of this environment id: a file holding others is an error "
                                      "(default: whatever environments the files hold)")


def add_parsers(sub: Any) -> None:
    """Register replay, collect, train-q, train, sft and grpo-data on the `aaos` command's subparsers."""
    p = sub.add_parser("replay", help="re-execute trajectory files and report any divergence",
                       description="Replays every episode of the files step by step; exits 1 if any step differs "
                                   "from its record (reward, breakdown, results, events, state hash, observation).")
    p.add_argument("files", nargs="+", type=Path, help="trajectory JSONL files")
    _env_option(p)
    p.set_defaults(func=_replay)

    p = sub.add_parser("collect", help="play episodes with a policy or a model and write their trajectories",
                       description="Plays every task x scenario with N train seeds and writes one trajectory record "
                                   "per step (with the observation acted on) to --out.")
    p.add_argument("--policy", default="heuristic", choices=POLICY_NAMES,
                   help="a baseline, llm or guarded (a model at --base-url; token from HF_TOKEN), or local (SmolLM2)")
    p.add_argument("--model", help="model name for llm and guarded")
    p.add_argument("--base-url", default=DEFAULT_BASE_URL)
    p.add_argument("--response-format", choices=("json_schema", "json_object", "none"), default="json_schema")
    _mode_option(p)
    p.add_argument("--env", default=aaos.DEFAULT_ENV, help=f"environment id (default {aaos.DEFAULT_ENV})")
    p.add_argument("--task", action="append", help="repeatable (default: every task)")
    p.add_argument("--scenario", action="append", help="repeatable (default: every train scenario)")
    p.add_argument("--episodes", type=int, default=2, help="train seeds per task and scenario (0, 1, ...)")
    p.add_argument("--out", type=Path, default=Path("runs/train/episodes.jsonl"))
    p.set_defaults(func=_collect)

    p = sub.add_parser("train-q", help="train a tabular Q-policy (seeded; minutes on 2 cores)",
                       description="Seeded tabular Q-learning over the compact state and moves the environment's "
                                   "kit offers; writes qtable.json, curve.csv (episode, return, epsilon, holdout "
                                   "score at checkpoints) and summary.json to --out.")
    p.add_argument("--env", default="chief_of_staff", help="environment id (its kit must offer `tabular`)")
    p.add_argument("--episodes", type=int, default=3000, help="training episodes (default 3000)")
    p.add_argument("--seed", type=int, default=0, help="exploration seed and first train seed")
    p.add_argument("--task", action="append", help="repeatable (default: every task)")
    p.add_argument("--scenario", action="append", help="repeatable (default: every train scenario)")
    p.add_argument("--checkpoints", type=int, default=10, help="holdout evaluations along the run")
    p.add_argument("--holdout-seeds", type=int, default=2, help="holdout seeds per task and scenario at checkpoints")
    p.add_argument("--out", type=Path, default=Path("runs/q"))
    p.set_defaults(func=_train_q)

    p = sub.add_parser("train", help="fine-tune the local SmolLM2 (SFT, DAgger, then a reward-driven stage) and "
                                     "judge it on holdout episodes",
                       description="collect -> SFT dataset -> LoRA SFT -> DAgger -> RFT (rejection sampling on the "
                                   "environment's rollout reward) -> GRPO -> GGUF adapters -> holdout evaluation "
                                   "(untrained, each trained stage, noop, random, champion) -> summary.json, eval.csv, "
                                   "plots/; a preset runs the stages it sets steps for. Resumable: a rerun skips the "
                                   "stages done with the same settings. Needs the [train] extra and the local model "
                                   "(docs/training.md).")
    p.add_argument("--env", default=aaos.DEFAULT_ENV, help=f"environment id (default {aaos.DEFAULT_ENV})")
    p.add_argument("--task", help="task id (default: the environment's default task)")
    p.add_argument("--preset", choices=tuple(PRESETS), default="cpu",
                   help="cpu: ~45 minutes on 2 cores (SFT, DAgger); cpu-long: <= 150 minutes on 2 cores (decision-"
                        "weighted SFT, DAgger, a round of RFT); gpu: an accelerator; mini: every stage on a sliver "
                        "(tests)")
    p.add_argument("--set", action="append", default=[], dest="overrides", metavar="FIELD=VALUE",
                   help="repeatable: change one field of the preset (aaos.training.presets.Preset), e.g. "
                        "rft_rounds=2; the summary records the preset as its name and these assignments, and a "
                        "rerun with another value redoes that field's stage and those after it")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path("runs/train/model"), help="the run folder (datasets, adapters, "
                                                                                "checkpoints, evidence)")
    p.add_argument("--results", type=Path, help="also copy the evidence and the final adapter here (the project "
                                                "keeps them in results/training/<env>: the Training tab and the "
                                                "local agent read them)")
    p.set_defaults(func=_train)

    p = _dataset_parser(sub, "sft", _sft, "build the SFT dataset (chat messages for TRL's SFTTrainer)",
                        "Keeps finished episodes scoring at least --min-score and, in them, the decisions whose "
                        "actions were applied; writes one chat per decision.")
    p.add_argument("--min-score", type=float, default=DEFAULT_MIN_SCORE, help="episode score filter")

    p = _dataset_parser(sub, "grpo-data", _grpo_data, "build the GRPO dataset (prompts with environment snapshots)",
                        "One prompt per decision of every step, with the snapshot that reward_fn and the TRL "
                        "environment (aaos.training.environment_class) restore.")
    p.add_argument("--horizon", type=int, default=None,
                   help=f"score each completion this many steps after the snapshot (default: {DEFAULT_HORIZON}, or "
                        "the episode's end, discounted, for an environment whose kit says rollout_to_end)")


def _dataset_parser(sub: Any, name: str, func: Callable[[argparse.Namespace], int], help_text: str,
                    description: str) -> argparse.ArgumentParser:
    """A dataset command: trajectory files in, --mode, and --out runs/train/<name>.jsonl."""
    p = sub.add_parser(name, help=help_text, description=description)
    p.add_argument("files", nargs="+", type=Path, help="trajectory JSONL files")
    _env_option(p)
    _mode_option(p)
    p.add_argument("--out", type=Path, default=Path(f"runs/train/{name.removesuffix('-data')}.jsonl"))
    p.set_defaults(func=func)
    return p

