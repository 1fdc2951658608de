"""`aaos bench`: run the benchmark from the command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import aaos
from aaos.agents.llm import MODES
from aaos.bench import paired, ray_backend
from aaos.bench.remote import Remote
from aaos.bench.report import gate, write_reports
from aaos.bench.runner import plan_jobs, read_records, run, run_fingerprint, salt_mismatch
from aaos.bench.stats import summarise
from aaos.core.extras import require, require_extra
from aaos.core.seeding import HOLDOUT_SALT_ENV, split_label
from aaos.policies import DEFAULT_BASE_URL, POLICY_NAMES, PolicySpec, policy_spec

DEFAULT_OUT = Path("runs/bench")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("bench", help="benchmark policies and models on tasks x scenarios x seeds",
                       description="Runs every policy on every task and scenario with N seeds per split; writes "
                                   "results.jsonl (resumable), leaderboard.csv/.json/.md/.html (ranks in groups from "
                                   "paired comparisons, and each task's noise floor), pairwise.csv/.json, "
                                   "noise_floor.csv and gate.json.")
    p.add_argument("--policy", action="append", default=None,
                   help=f"repeatable: {', '.join(POLICY_NAMES)} (default: heuristic, random, noop); "
                        "llm and guarded use --model/--base-url (token from HF_TOKEN), local starts SmolLM2")
    p.add_argument("--policies", metavar="A,B,...",
                   help="comma-separated policies, added to any --policy (e.g. heuristic,q:runs/q/qtable.json; "
                        "q:PATH plays the Q-table `aaos train-q` wrote)")
    p.add_argument("--model", help="model name for llm/guarded")
    p.add_argument("--base-url", default=DEFAULT_BASE_URL)
    p.add_argument("--secondary-model", help="fallback model on the same base URL before the champion")
    p.add_argument("--mode", choices=MODES, default="per_role")
    p.add_argument("--response-format", choices=("json_schema", "json_object", "none"), default="json_schema")
    p.add_argument("--env", default=aaos.DEFAULT_ENV, help=f"environment id (default {aaos.DEFAULT_ENV}; registered: "
                                                          "see aaos.env_ids(), AAOS_ENVS adds more)")
    p.add_argument("--task", action="append", help="repeatable (default: all tasks)")
    p.add_argument("--scenario", action="append",
                   help="repeatable: a scenario id or a .json file (default: all built-in scenarios, unless "
                        "--scenarios is given)")
    p.add_argument("--scenarios", type=Path, metavar="DIR",
                   help="also evaluate on every *.json scenario file in DIR, e.g. a private set an evaluator keeps "
                        "outside the repository (see `aaos scenarios generate`); every file must be valid")
    p.add_argument("--holdout-salt", metavar="SALT",
                   help=f"the secret salt that re-draws every holdout variant, for this run (default: "
                        f"${HOLDOUT_SALT_ENV}, which keeps it off the command line); never written: each record "
                        "carries only its fingerprint, holdout_salt. Train variants ignore it")
    p.add_argument("--remote", metavar="URL",
                   help="play every episode on the AAOS server at URL (e.g. one started with `aaos serve --eval`: "
                        "the state hidden, the holdout drawn from its secret salt, whose fingerprint the records "
                        "carry) instead of in this process; not with --ray, --trajectories, --holdout-salt, scenario "
                        "files or policies that read the environment (oracle, guarded)")
    p.add_argument("--split", choices=("train", "holdout", "both"), default="both")
    p.add_argument("--episodes", type=int, default=paired.DEFAULT_EPISODES,
                   help=f"seeds per split for each task and scenario (default {paired.DEFAULT_EPISODES}: enough to "
                        "detect a 0.05 difference on every org task and split, measured; the leaderboard's noise floor "
                        "says what a run can detect)")
    p.add_argument("--concurrency", type=int, default=8,
                   help="episodes and model calls at once (with --ray: episodes in flight)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT,
                   help=f"output folder (default {DEFAULT_OUT}, under the current folder; created if needed). A run "
                        "into a folder that holds a results.jsonl resumes it: the episodes already recorded there are "
                        "not played again (those that failed are)")
    p.add_argument("--gate", "--candidate", dest="candidate",
                   help="policy to test for promotion against the champion (its name or kind, e.g. q)")
    p.add_argument("--trajectories", action="store_true",
                   help="also write every episode's per-step trajectory to trajectories.jsonl (for aaos replay/sft)")
    p.add_argument("--ray", metavar="ADDRESS",
                   help="run the episodes as Ray tasks, with the records of a local run (but wall_s); needs "
                        f"{ray_backend.INSTALL_HINT}. ADDRESS: 'auto' (the cluster `ray start --head` started on this "
                        "machine, or RAY_ADDRESS), HOST:PORT of a head node, ray://HOST:10001 (Ray Client, needs "
                        "ray[client]) or 'local' (a cluster of this machine, started for the run and stopped after). "
                        "The tasks run this checkout; every node needs aaos's dependencies installed")
    p.add_argument("--push-to-hub", metavar="REPO_ID",
                   help="after the run, upload the output folder to this Hugging Face dataset (owner/name) under "
                        "runs/<run id>/ with a dataset card; token from HF_TOKEN (see docs/benchmark_upload.md)")
    visibility = p.add_mutually_exclusive_group()
    visibility.add_argument("--hub-private", dest="hub_private", action="store_true", default=True,
                            help="create the dataset private (default; an existing repo keeps its visibility)")
    visibility.add_argument("--hub-public", dest="hub_private", action="store_false",
                            help="create the dataset public")
    p.set_defaults(func=main)


def _default_policies(env: str) -> list[str]:
    """The champion (where the environment has one), random and noop."""
    return [name for name in ("heuristic", "random", "noop") if name in aaos.policies.available(env)]


def _specs(args: argparse.Namespace) -> dict[str, PolicySpec]:
    names = [*(args.policy or []), *(n.strip() for n in (args.policies or "").split(",") if n.strip())]
    specs = [policy_spec(name, args.model, args.base_url, args.mode, args.response_format, args.secondary_model,
                         args.env) for name in dict.fromkeys(names or _default_policies(args.env))]
    return {spec.name: spec for spec in specs}


def scenario_files(folder: Path, env: str = aaos.DEFAULT_ENV) -> list[str]:
    """The *.json scenario files of environment `env` in `folder`, sorted by name, as scenario names the runner
    takes (their paths), each read by the environment's kit; an environment without scenario files, a missing or
    empty folder, or any invalid file, raises ValueError naming each bad file and field."""
    read = aaos.kit_of(env).scenario_file
    if read is None:
        raise ValueError(f"--scenarios {folder}: environment {env!r} has no scenario files (its kit reads none)")
    if not folder.is_dir():
        raise ValueError(f"--scenarios {folder}: no such folder")
    paths = sorted(folder.glob("*.json"))
    if not paths:
        raise ValueError(f"--scenarios {folder}: the folder holds no *.json scenario files")
    problems = []
    for path in paths:
        try:
            read(str(path))
        except ValueError as error:
            problems.append(str(error))
    if problems:
        raise ValueError(f"--scenarios {folder}: {len(problems)} of {len(paths)} scenario files are invalid "
                         "(fix or remove them):\n" + "\n".join(problems))
    return [str(path) for path in paths]


REMOTE_REFUSED = ("oracle", "guarded")
"""Policy kinds that read the environment itself (its ground truth, or copies for lookahead): not on a server."""


def _remote(args: argparse.Namespace, specs: dict[str, PolicySpec], scenarios: list[str]) -> Remote | None:
    """The server --remote names, checked, or None; ValueError for what cannot be played on it."""
    if not args.remote:
        return None
    refused = [f"--{flag}" for flag, given in (("ray", args.ray), ("trajectories", args.trajectories),
                                                ("holdout-salt", args.holdout_salt is not None)) if given]
    refused += [f"policy {s.name!r} ({s.kind} reads the environment)" for s in specs.values()
                if s.kind in REMOTE_REFUSED]
    refused += [f"scenario file {path}" for path in scenarios if path.endswith(".json")]
    if refused:
        raise ValueError(f"--remote: cannot play {', '.join(refused)} on a server")
    return Remote.connect(args.remote, [args.env])


def main(args: argparse.Namespace) -> int:
    """`aaos bench`; with --holdout-salt, the salt is in force (in this process's environment) for the run only."""
    require_extra("bench")  # its progress bar and reports: a missing one stops the command before any episode
    if args.holdout_salt is None:
        return _bench(args)
    if not args.holdout_salt:
        raise ValueError("--holdout-salt: the salt must not be empty")
    previous = os.environ.get(HOLDOUT_SALT_ENV)
    os.environ[HOLDOUT_SALT_ENV] = args.holdout_salt  # before any environment is built
    try:
        return _bench(args)
    finally:
        if previous is None:
            os.environ.pop(HOLDOUT_SALT_ENV, None)
        else:
            os.environ[HOLDOUT_SALT_ENV] = previous


def _bench(args: argparse.Namespace) -> int:
    if args.ray and (problem := ray_backend.missing()):
        raise ValueError(problem)
    hub = require("aaos.bench.hub", "bench") if args.push_to_hub else None
    if hub is not None:
        hub.check_push_target(args.push_to_hub)  # a bad repo id or a missing HF_TOKEN fails now, not after the run
    specs = _specs(args)
    tasks = args.task or [t["id"] for t in aaos.list_tasks(args.env)]
    scenarios = list(args.scenario or [])
    if args.scenarios is not None:
        scenarios += [path for path in scenario_files(args.scenarios, args.env) if path not in scenarios]
    scenarios = scenarios or [s["id"] for s in aaos.list_scenarios(env=args.env)]
    splits = ("train", "holdout") if args.split == "both" else (args.split,)
    jobs = plan_jobs(list(specs), tasks, scenarios, args.episodes, splits, args.env)
    remote = _remote(args, specs, scenarios)
    fingerprint = run_fingerprint(remote)
    results = args.out / "results.jsonl"
    other_salts = sorted({str(r.get("holdout_salt")) for r in read_records(results) if salt_mismatch(r, fingerprint)})
    if other_salts:
        raise ValueError(f"{results} holds holdout episodes played under another holdout salt (fingerprint "
                         f"{', '.join(other_salts)}; this run: {fingerprint}): write this run to another --out")
    with require("tqdm", "bench").tqdm(total=len(jobs), desc="episodes", unit="ep", file=sys.stderr) as bar:
        def progress(finished: int, total: int, record: dict[str, Any]) -> None:
            bar.n = finished
            bar.set_postfix_str(f"{record['policy']} {record['task']} {record.get('score', float('nan')):.3f}")
            bar.refresh()

        trajectories = args.out / "trajectories.jsonl" if args.trajectories else None
        if args.ray:
            records = ray_backend.run_jobs_on_ray(jobs, specs, results, args.ray, args.concurrency, progress,
                                                  trajectories)
        else:
            records = run(jobs, specs, results, args.concurrency, progress, trajectories, remote)
    stray = [r for r in records if r.get("error") is None and salt_mismatch(r, fingerprint)]
    if stray:
        raise ValueError(f"{len(stray)} holdout episode(s) were played under another holdout salt (fingerprint "
                         f"{stray[0].get('holdout_salt')}) than this run's ({fingerprint}): with --ray every worker "
                         f"needs the same {HOLDOUT_SALT_ENV} in its environment; no report was written")
    rows = summarise(records)
    paths = write_reports(rows, args.out, records)
    (args.out / "policies.json").write_text(json.dumps([s.describe() for s in specs.values()], indent=2) + "\n")
    print((args.out / "leaderboard.md").read_text())
    for row in rows:
        if row.get("unranked"):
            print(f"unranked: {row['policy']} on {row['split']}: {row['unranked']}", file=sys.stderr)
    failed = sum(1 for r in records if r.get("error"))
    if failed:
        print(f"{failed} episode(s) failed; see 'error' in {args.out / 'results.jsonl'}", file=sys.stderr)
    if args.candidate:
        candidate = next((s.name for s in specs.values() if args.candidate in (s.name, s.kind)), args.candidate)
        result = gate(rows, candidate)
        (args.out / "gate.json").write_text(json.dumps(result.to_dict(), indent=2) + "\n")
        print(f"gate: {result.verdict}: " + "; ".join(result.reasons))
    if remote is not None:
        print(f"played on {remote.url}: {split_label('holdout', fingerprint)}"
              + (f", the server's salt's fingerprint {fingerprint}" if fingerprint else ""))
    elif fingerprint is not None:
        print(f"holdout salt in force: fingerprint {fingerprint} (the records' holdout_salt)")
    print("written: " + ", ".join(str(p) for p in paths.values()))
    if hub is not None:
        pushed = hub.push_results(args.out, args.push_to_hub, private=args.hub_private)
        print(f"pushed run {pushed.run_id}: {pushed.url}")
    return 0
