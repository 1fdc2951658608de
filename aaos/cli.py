"""The `aaos` command: list, validate, scenarios generate, run, serve, bench, and training (collect, replay, sft,
grpo-data)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import aaos
from aaos.bench import cli as bench_cli
from aaos.envs.org.scenario import SCENARIO_DIR, ScenarioError, load_scenario_file
from aaos.server.address import add_address_arguments
from aaos.training import cli as training_cli


def _list(args: argparse.Namespace) -> int:
    print("tasks:")
    for task in aaos.list_tasks(args.env):
        print(f"  {task['id']:<18} {task['difficulty']:<6} max_steps={task['max_steps']:<3} {task['description']}")
    print("scenarios:")
    for scenario in aaos.list_scenarios(env=args.env):
        print(f"  {scenario['id']:<26} {scenario['split']:<7} {scenario['title']}")
    print("policies: " + ", ".join(aaos.policies.names()))
    return 0


def _validate(args: argparse.Namespace) -> int:
    paths = args.files or sorted(str(p) for p in SCENARIO_DIR.glob("*.json"))
    failed = 0
    for path in paths:
        try:
            scenario = load_scenario_file(path)
        except ScenarioError as error:
            failed += 1
            print(f"FAIL {error}")
            continue
        print(f"ok   {path} ({scenario.id}, {scenario.split}, {len(scenario.tasks)} tasks, "
              f"{len(scenario.risks)} risks, {len(scenario.events)} events)")
    return 1 if failed else 0


def _generate(args: argparse.Namespace) -> int:
    from aaos.envs.org.generate import write_scenarios

    if args.seed < 0:
        raise ValueError(f"--seed must be a non-negative integer, got {args.seed}")
    for path in write_scenarios(args.seed, args.out, args.count, args.split):
        print(f"wrote {path}")
    return 0


def _run(args: argparse.Namespace) -> int:
    env = aaos.make(args.task, scenario=args.scenario, seed=args.seed, env=args.env)
    policy = aaos.policies.make(args.policy, seed=args.seed, env=args.env)
    observation = env.reset()
    rewards = []
    while True:
        result = env.step(policy.act(observation))
        observation = result.observation
        rewards.append(result.reward)
        if not args.quiet:
            applied = sum(1 for r in result.info["action_results"].values() if r["status"] == "applied")
            print(f"step {result.info['step']:>2}  reward {result.reward:.3f}  score {result.info['score']:.3f}  "
                  f"applied {applied}/6  oversight {len(result.info['oversight_events'])}")
        if result.done:
            break
    summary = {
        "task": args.task, "scenario": args.scenario, "seed": args.seed, "policy": args.policy,
        "steps": result.info["step"], "score": round(result.info["score"], 4),
        "components": {k: (round(v, 4) if v is not None else None)
                       for k, v in result.info["reward_breakdown"]["components"].items()},
        "penalty": round(result.info["reward_breakdown"]["penalty"], 4),
        "return": round(sum(rewards), 4),
    }
    print(json.dumps(summary, indent=None if args.quiet else 2))
    return 0


def _serve(args: argparse.Namespace) -> int:
    from aaos.server.app import serve  # the server's dependencies load only for this command

    print(f"AAOS API on http://{args.host}:{args.port} (docs at /docs)", flush=True)
    serve(args.host, args.port)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="aaos", description="AAOS: the Autonomous AI Organization Simulator")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("list", help="list tasks, scenarios and policies")
    p.add_argument("--env", default="org")
    p.set_defaults(func=_list)

    p = sub.add_parser("validate", help="validate scenario files (default: the built-in ones)")
    p.add_argument("files", nargs="*", help="scenario JSON files")
    p.set_defaults(func=_validate)

    p = sub.add_parser("scenarios", help="make scenario files (see `aaos scenarios generate -h`)")
    scenarios = p.add_subparsers(dest="scenarios_command", metavar="{generate}", required=True)
    p = scenarios.add_parser("generate", help="write new, valid scenario files drawn by a seeded procedural generator",
                             description="Writes COUNT scenario files named <id>.json into OUT: 4-7 tasks, 3-6 hidden "
                                         "risks, one event of each kind, pools and policy, drawn from a broad "
                                         "distribution. The same seed gives byte-identical files. Keep a private set "
                                         "outside the repository and evaluate on it with `aaos bench --scenarios OUT`.")
    p.add_argument("--seed", type=int, required=True, help="generator seed (non-negative)")
    p.add_argument("--out", type=Path, required=True, help="folder to write the files into (created if needed)")
    p.add_argument("--count", type=int, default=1, help="how many scenarios to write (default 1)")
    p.add_argument("--split", choices=("train", "holdout"), default="train",
                   help="the files' split: holdout scenarios draw only holdout variants (default train)")
    p.set_defaults(func=_generate)

    p = sub.add_parser("run", help="play one episode with a policy and print the score")
    p.add_argument("--env", default="org")
    p.add_argument("--task", default="full_episode")
    p.add_argument("--scenario", default="product_launch_failure", help="scenario id or path to a .json file")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--policy", default="heuristic", choices=aaos.policies.names())
    p.add_argument("--quiet", action="store_true", help="print only the summary line")
    p.set_defaults(func=_run)

    p = sub.add_parser("serve", help="run the HTTP/WebSocket/MCP API server (OpenEnv-compatible), without the UI")
    add_address_arguments(p)
    p.set_defaults(func=_serve)

    bench_cli.add_parser(sub)
    training_cli.add_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ValueError as error:
        print(f"aaos: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
