"""The `aaos` command: list, validate, scenarios generate, run, check, doctor, serve, bench, and training (collect,
replay, sft, grpo-data). Every command reaches its environment through the registry and its kit (`--env`)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn, TypeVar

import aaos
from aaos import doctor
from aaos.agents.llm import LLMConfig
from aaos.bench import cli as bench_cli
from aaos.core.extras import DependencyNotInstalled, require
from aaos.core.scenario_files import ScenarioError, SchemaMismatch
from aaos.core.spec import ScenarioInfo
from aaos.data import data_dir
from aaos.server import without_openenv_web_interface
from aaos.server.address import add_server_arguments
from aaos.training import cli as training_cli


def _list(args: argparse.Namespace) -> int:
    print("environments: " + ", ".join(aaos.env_ids()))
    print(f"tasks of {args.env}:")
    for task in aaos.list_tasks(args.env):
        print(f"  {task['id']:<18} {task['difficulty']:<6} max_steps={task['max_steps']:<3} {task['description']}")
    print(f"scenarios of {args.env}:")
    for scenario in aaos.list_scenarios(env=args.env):
        print(f"  {scenario['id']:<26} {scenario['split']:<7} {scenario['title']}")
    print("policies: " + ", ".join(aaos.policies.names()))
    return 0


def _validate(args: argparse.Namespace) -> int:
    """Each file validated as its environment's scenario: --env's, else the one whose schema it matches (said on
    each line); without files, the built-in ones of --env, else of every environment."""
    if args.files:
        targets = [(path, args.env) for path in args.files]
    else:
        targets = [(path, env) for env in ([args.env] if args.env else aaos.env_ids())
                   for path in _builtin_files(env, explicit=args.env is not None)]
    failed = 0
    for path, env in targets:
        try:
            env, info = _validated(path, env)
        except (OSError, ValueError) as error:
            failed += 1
            print(f"FAIL {path}")
            print("\n".join(f"     {line}" for line in str(error).splitlines()))
            continue
        print(f"ok   {path} (env {env}: {info.id}, {info.split}: {info.title})")
    return 1 if failed else 0


def _builtin_files(env: str, explicit: bool) -> list[str]:
    """The built-in scenario files of `env`; an environment named by --env must have some."""
    if aaos.kit_of(env).scenario_file is None:
        if explicit:
            raise ValueError(f"environment {env!r} has no scenario files (its kit reads none)")
        return []
    folder = data_dir("scenarios") / env
    paths = sorted(str(p) for p in folder.glob("*.json"))
    if not paths and explicit:
        raise ValueError(f"environment {env!r} has no built-in scenario files (none in {folder}); name the files "
                         "to validate")
    return paths


def _validated(path: str, env: str | None) -> tuple[str, ScenarioInfo]:
    """The environment a scenario file was validated as, and its id, split and title; ValueError naming the file,
    each field that is wrong and, for a file of another environment than `env`, which one it is."""
    if env is None:
        owners = aaos.envs.scenario_envs(path)
        if len(owners) == 1:
            env = owners[0]
        elif owners:
            raise ValueError(f"{path}: a valid scenario of environments {', '.join(owners)}: say which with --env")
        else:
            _closest(path)
    read = aaos.kit_of(env).scenario_file
    if read is None:
        raise ValueError(f"environment {env!r} has no scenario files (its kit reads none)")
    try:
        return env, read(path)
    except SchemaMismatch as error:
        hint = aaos.envs.wrong_env(path, env)
        raise ValueError(f"{hint}\n{error}" if hint else str(error)) from error


def _closest(path: str) -> NoReturn:
    """Raise the errors of the environment whose schema a file matching none comes closest to, naming it."""
    errors: list[tuple[int, str, ScenarioError]] = []
    for env in aaos.env_ids():
        read = aaos.kit_of(env).scenario_file
        if read is None:
            continue
        try:
            read(path)
        except ScenarioError as error:
            if not isinstance(error, SchemaMismatch):
                raise  # not JSON, or no such file: the same for every environment
            errors.append((error.problems, env, error))
    if not errors:
        raise ValueError("no environment has scenario files")
    problems, env, error = min(errors, key=lambda found: found[:2])
    raise ValueError(f"{path}: not a valid scenario of any environment; validated as {env!r}, the closest "
                     f"({problems} problem{'s' if problems != 1 else ''}; --env to choose another):\n{error}")


def _generate(args: argparse.Namespace) -> int:
    write = aaos.kit_of(args.env).generate_scenarios
    if write is None:
        raise ValueError(f"environment {args.env!r} has no scenario generator")
    if args.seed < 0:
        raise ValueError(f"--seed must be a non-negative integer, got {args.seed}")
    for path in write(args.seed, args.out, args.count, args.split):
        print(f"wrote {path}")
    return 0


def _run(args: argparse.Namespace) -> int:
    declared = aaos.spec(args.env)
    task, scenario = args.task or declared.default_task, args.scenario or declared.default_scenario
    env = aaos.make(task, scenario=scenario, seed=args.seed, env=args.env)
    policy = aaos.policies.make(args.policy, seed=args.seed, env=args.env)
    observation = env.reset()
    policy.reset(args.seed)
    policy.bind(env)
    rewards = []
    while True:
        result = env.step(policy.act(observation))
        observation = result.observation
        rewards.append(result.reward)
        if not args.quiet:
            applied = sum(1 for r in result.info["action_results"].values() if r["status"] == "applied")
            print(f"step {result.info['step']:>2}  reward {result.reward:.3f}  score {result.info['score']:.3f}  "
                  f"applied {applied}/{len(declared.roles)}  oversight {len(result.info['oversight_events'])}")
        if result.done:
            break
    summary = {
        "env": args.env, "task": task, "scenario": scenario, "seed": args.seed, "policy": args.policy,
        "steps": result.info["step"], "score": round(result.info["score"], 4),
        "components": {k: (round(v, 4) if v is not None else None)
                       for k, v in result.info["reward_breakdown"]["components"].items()},
        "penalty": round(result.info["reward_breakdown"]["penalty"], 4),
        "return": round(sum(rewards), 4),
    }
    print(json.dumps(summary, indent=None if args.quiet else 2))
    return 0


def _check(args: argparse.Namespace) -> int:
    """`aaos check ENV` (in process) or `aaos check --url URL` (any OpenEnv server, over the wire)."""
    if (args.env is None) == (args.url is None):
        raise ValueError("name an environment to check in process (aaos check ENV) or a running server "
                         "(aaos check --url URL), one of the two")
    if args.url is None:
        wire_only = [flag for flag, value in (("--reset-param", args.reset_param), ("--json", args.json),
                                             ("--markdown", args.markdown), ("--max-steps", args.max_steps),
                                             ("--timeout", args.timeout)) if value is not None]
        if wire_only:
            raise ValueError(f"{', '.join(wire_only)} go with --url; aaos check ENV takes --episodes, --seed, --fuzz")
        report = aaos.check_env(args.env, episodes=_given(args.episodes, 6), seed=args.seed,
                                fuzz=_given(args.fuzz, 2000))
        print(report)
        return 0 if report.passed else 1
    remote = require("aaos.check.remote", "server")  # httpx and websockets load only for --url
    checked = remote.check_url(args.url, seed=args.seed, episodes=_given(args.episodes, 4), fuzz=_given(args.fuzz, 300),
                               max_steps=_given(args.max_steps, 200), timeout=_given(args.timeout, 10.0),
                               reset_params=dict(map(_reset_param, args.reset_param or ())))
    print(checked.markdown(), end="")
    if args.json is not None:
        args.json.write_text(checked.json_text(), encoding="utf-8")
    if args.markdown is not None:
        args.markdown.write_text(checked.markdown(), encoding="utf-8")
    return 0 if checked.passed else 1


Given = TypeVar("Given", int, float)


def _given(value: Given | None, default: Given) -> Given:
    return default if value is None else value


def _reset_param(text: str) -> tuple[str, object]:
    """KEY=VALUE as a reset parameter: VALUE as JSON where it is JSON (7, true, "x"), else as a string."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise ValueError(f"--reset-param takes KEY=VALUE (e.g. env=inbox), got {text!r}")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


def _doctor(args: argparse.Namespace) -> int:
    env_ids = [args.env] if args.env else aaos.env_ids()
    return doctor.run(env_ids, os.environ.get(doctor.TOKEN_VARIABLE, ""), LLMConfig.from_env(),
                      lambda line: print(line, flush=True), timeout_s=args.timeout, seed=args.seed)


def _serve(args: argparse.Namespace) -> int:
    without_openenv_web_interface()
    server = require("aaos.server.app", "server")  # the server's dependencies load only for this command
    print(f"AAOS API on http://{args.host}:{args.port} (docs at /docs)", flush=True)
    server.serve_arguments(args)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="aaos", description="AAOS: the Autonomous AI Organization Simulator")
    sub = parser.add_subparsers(dest="command", required=True)

    envs = aaos.env_ids()
    env_help = f"the environment (default {aaos.DEFAULT_ENV})"

    p = sub.add_parser("list", help="list environments, and an environment's tasks, scenarios and policies")
    p.add_argument("--env", choices=envs, default=aaos.DEFAULT_ENV, help=env_help)
    p.set_defaults(func=_list)

    p = sub.add_parser("validate", help="validate scenario files (default: the built-in ones)",
                       description="Validates each file as a scenario of --env, or without it of the environment "
                                   "whose schema it matches (each line says which). See docs/scenarios.md.")
    p.add_argument("--env", choices=envs, default=None,
                   help="the environment the files are scenarios of (default: read from each file)")
    p.add_argument("files", nargs="*", help="scenario JSON files")
    p.set_defaults(func=_validate)

    p = sub.add_parser("scenarios", help="make scenario files (see `aaos scenarios generate -h`)")
    scenarios = p.add_subparsers(dest="scenarios_command", metavar="{generate}", required=True)
    p = scenarios.add_parser("generate", help="write new, valid scenario files drawn by a seeded procedural generator",
                             description="Writes COUNT new scenario files into OUT, drawn by the environment's seeded "
                                         "generator. The same seed gives byte-identical files. Keep a private set "
                                         "outside the repository and evaluate on it with `aaos bench --scenarios OUT`.")
    p.add_argument("--env", choices=envs, default=aaos.DEFAULT_ENV, help=env_help)
    p.add_argument("--seed", type=int, required=True, help="generator seed (non-negative)")
    p.add_argument("--out", type=Path, required=True, help="folder to write the files into (created if needed)")
    p.add_argument("--count", type=int, default=1, help="how many scenarios to write (default 1)")
    p.add_argument("--split", choices=("train", "holdout"), default="train",
                   help="the files' split: holdout scenarios draw only holdout variants (default train)")
    p.set_defaults(func=_generate)

    p = sub.add_parser("run", help="play one episode with a policy and print the score")
    p.add_argument("--env", choices=envs, default=aaos.DEFAULT_ENV, help=env_help)
    p.add_argument("--task", help="task id (default: the environment's default task)")
    p.add_argument("--scenario", help="scenario id or path to a scenario file (default: the environment's default)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--policy", default="heuristic", choices=aaos.policies.names())
    p.add_argument("--quiet", action="store_true", help="print only the summary line")
    p.set_defaults(func=_run)

    p = sub.add_parser("check", help="check an environment, or any OpenEnv server with --url, against the protocol "
                                     "(exit 1 when a check fails)",
                       description="aaos check ENV runs aaos.check_env: determinism (in and across processes), "
                                   "malformed input, JSON state and observations, clones, legal actions, the info and "
                                   "observation contracts, reward range, return = score, the noop < random < champion "
                                   "ladder and hidden ids; one line per check. aaos check --url URL checks any "
                                   "OpenEnv-compatible server over HTTP and WebSocket from what it publishes "
                                   "(/metadata, /schema): determinism, the reset/step/state contract, session "
                                   "isolation, malformed actions, frames and HTTP bodies, step after done, a noop vs "
                                   "random-legal ladder and return = reported score; a Markdown report (and --json).")
    p.add_argument("env", nargs="?", choices=envs, help="the environment to check in process")
    p.add_argument("--url", help="check the OpenEnv server at this base URL instead (needs the [server] extra)")
    p.add_argument("--episodes", type=int, help="episodes per ladder policy (default 6; 4 with --url)")
    p.add_argument("--seed", type=int, default=0, help="seed of the checked episodes (default 0)")
    p.add_argument("--fuzz", type=int, help="malformed actions to send (default 2000; 300 with --url)")
    p.add_argument("--reset-param", action="append", metavar="KEY=VALUE",
                   help="with --url: a reset parameter sent with every reset, and as a query parameter of /schema "
                        "and /metadata (e.g. env=inbox on an AAOS server); repeatable")
    p.add_argument("--max-steps", type=int, help="with --url: the longest episode played (default 200)")
    p.add_argument("--timeout", type=float, help="with --url: seconds to wait for any answer (default 10)")
    p.add_argument("--json", type=Path, metavar="PATH", help="with --url: also write the report as JSON here")
    p.add_argument("--markdown", type=Path, metavar="PATH", help="with --url: also write the Markdown report here")
    p.set_defaults(func=_check)

    p = sub.add_parser("doctor", help="audit the setup: model token, model endpoint, champion runs (exit 1 on a "
                                      "failure)",
                       description="Says whether HF_TOKEN is present (never its value), whether the model endpoint "
                                   "(MODEL_NAME at API_BASE_URL) answers and how fast (skipped when MODEL_NAME is "
                                   "unset), and plays the champion on each environment's easy and medium tasks. "
                                   "Exits 1 if a check fails.")
    p.add_argument("--env", choices=envs, help="audit this environment only (default: every registered one)")
    p.add_argument("--timeout", type=float, default=doctor.ENDPOINT_TIMEOUT_S,
                   help=f"seconds to wait for the model endpoint (default {doctor.ENDPOINT_TIMEOUT_S:g})")
    p.add_argument("--seed", type=int, default=0, help="seed of the champion runs (default 0)")
    p.set_defaults(func=_doctor)

    p = sub.add_parser("serve", help="run the HTTP/WebSocket/MCP API server (OpenEnv-compatible), without the UI")
    add_server_arguments(p)
    p.set_defaults(func=_serve)

    bench_cli.add_parser(sub)
    training_cli.add_parsers(sub)
    return parser


READER_GONE = 141
"""The exit status when the reader of the output stops reading (`aaos run | head`): 128 + SIGPIPE, what a shell
reports for a command a closed pipe stops, such as `yes | head`; the pipeline's own status is the reader's."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. Input to fix (exit 2) and a missing install extra (exit 1) are one line on stderr, with no
    traceback; output whose reader went away (the standard library's BrokenPipeError recipe) ends quietly, with
    READER_GONE."""
    args = build_parser().parse_args(argv)
    try:
        status = args.func(args)
        sys.stdout.flush()  # a reader gone while the last lines were buffered is found here, not at exit
        return status
    except ValueError as error:
        print(f"aaos: {error}", file=sys.stderr)
        return 2
    except DependencyNotInstalled as missing:
        print(f"aaos: {missing}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # what is still buffered goes nowhere at exit, with no second error
        os.close(devnull)
        return READER_GONE


if __name__ == "__main__":
    raise SystemExit(main())
