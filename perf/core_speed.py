"""Speed and memory of the simulation core, against the budgets of the design (DESIGN §11 / docs/performance.md).

    python perf/core_speed.py                     # every environment, then org's episode and memory figures
    python perf/core_speed.py --quick --env org   # fewer repeats, one environment
    python perf/core_speed.py --against ../base   # the same measures of another checkout, interleaved with these
    python perf/core_speed.py --instructions --against ../base   # instructions per step (valgrind), both checkouts

Per environment: microseconds per joint step replaying the champion's actions on the hardest task over every
scenario (reset excluded), with the observation built (every role's view) and with observe=False, against the
budgets (45 µs observed, 16 µs observe=False), beside the protocol floor: what any environment of the protocol
pays per step with no world at all (a result record per role, a reward delivery, the step info).

This machine is shared and noisy: every timing is repeated and the best and the median repeat are printed with
the load average. --against PATH (another checkout's root, e.g. `git worktree add ../base HEAD~1`) measures it
in subprocesses that alternate with this checkout's, so that before and after see the same load, and prints
the speed-up of the best repeats and the median of each alternation's own (paired) speed-up.

The budgets were set on a faster day of this VM, against the code before the speed work (036f955, 90 µs and
27.6 µs for org then): `--against` a worktree of 036f955 shows how far each environment has come on today's
machine (2.0x and 1.73x as fast are the budgets' ratios).

--instructions counts instead of timing: the machine instructions per step of the same replay, from valgrind's
cachegrind (installed with `apt-get install valgrind`) run twice per measure: 1 + INSTRUCTION_REPEATS replays, and
1 replay followed by INSTRUCTION_REPEATS resets alone, so that start-up, imports, the champion's own play and the
resets cancel out (PYTHONHASHSEED is fixed, so both runs do the same work before the replay). The count does
not move with the machine's load: two checkouts' counts compare to the instruction, where timings on this VM vary
by ±30 % from one run to the next. It is a proxy for time (memory stalls are not counted), and a ratio of counts
is near the ratio of the best timings.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import statistics
import subprocess
import sys
import time
import tracemalloc
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import aaos
from aaos.core.actions import result_record
from aaos.core.env import Environment
from aaos.core.reward import RewardLedger
from aaos.core.seeding import split_seeds

BUDGET_OBSERVED_US = 45.0
BUDGET_UNOBSERVED_US = 16.0
TARGETS = {"thousand_episodes_s": 30.0, "idle_env_bytes": 1_000_000}
HERE = Path(__file__).resolve().parent.parent
PAIRED = 3
"""Repeats of each checkout per alternation with --against."""
INSTRUCTION_REPEATS = 3
"""Extra repeats of the replay in --instructions' second run."""


Trace = tuple[Environment, list[dict[str, Any]]]


def champion_traces(env_id: str) -> list[Trace]:
    """Per scenario of the hardest task: an environment and the joint actions the champion takes in its seed-0
    episode (replayed for pure environment timing)."""
    spec = aaos.spec(env_id)
    task = spec.tasks[-1].id
    traces = []
    for scenario in spec.scenarios:
        env = aaos.make(task, scenario=scenario.id, seed=0, env=env_id)
        policy = aaos.policies.make("heuristic", env=env_id)
        observation = env.reset()
        policy.bind(env)
        actions = []
        while True:
            joint = policy.act(observation)
            actions.append(joint)
            result = env.step(joint)
            observation = result.observation
            if result.done:
                break
        traces.append((aaos.make(task, scenario=scenario.id, seed=0, env=env_id), actions))
    return traces


def step_micros(traces: list[Trace], observe: bool, repeats: int) -> list[float]:
    """µs per joint step, one figure per repeat of every trace."""
    figures = []
    for _ in range(repeats):
        elapsed = 0.0
        steps = 0
        for env, actions in traces:
            env.reset()
            start = time.perf_counter()
            for joint in actions:
                env.step(joint, observe=observe)
            elapsed += time.perf_counter() - start
            steps += len(actions)
        figures.append(elapsed / steps * 1e6)
    return figures


def floor_micros(roles: tuple[str, ...], repeats: int, steps: int = 20_000) -> list[float]:
    """µs per step of the protocol's bookkeeping alone: read each role's action, write its result record, deliver
    the reward and fill the step info; no world, no rules, no grading."""
    joint = {role: {"action_type": "no_op", "payload": {}} for role in roles}
    figures = []
    for _ in range(repeats):
        ledger = RewardLedger()
        start = time.perf_counter()
        for step in range(1, steps + 1):
            records = {role: result_record(step, role, joint[role]["action_type"], {}, "applied", "no-op")
                       for role in roles}
            delivery = ledger.deliver(step, 0.5, step == steps)
            info = {"score": 0.5, "step": step, "reward_breakdown": delivery.breakdown({}, {}, 0.0, step == steps),
                    "action_results": records, "oversight_events": [], "scenario_events": [], "errors": []}
        figures.append((time.perf_counter() - start) / steps * 1e6)
        assert info["step"] == steps
    return figures


def replay(env_id: str, observe: bool, repeats: int, resets: int) -> int:
    """Replay the champion's traces `repeats` times, then reset each trace's environment `resets` times more
    (--instructions' child); returns the steps of one replay."""
    traces = champion_traces(env_id)
    step_micros(traces, observe, repeats)
    for env, _ in traces * resets:
        env.reset()
    return sum(len(actions) for _, actions in traces)


def instructions_in(root: Path, env_id: str, observe: bool) -> float:
    """Instructions per joint step of the replay in the checkout at `root`, resets excluded: valgrind's count of a
    run of 1 + INSTRUCTION_REPEATS replays less that of a run of 1 replay and INSTRUCTION_REPEATS resets alone, over
    the extra replays' steps."""
    environment = {**os.environ, "PYTHONPATH": str(root), "PYTHONHASHSEED": "0"}
    counts = []
    steps = 0
    for repeats, resets in ((1 + INSTRUCTION_REPEATS, 0), (1, INSTRUCTION_REPEATS)):
        done = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                               sys.executable, __file__, "--child-replay", env_id, "--observe", str(int(observe)),
                               "--repeats", str(repeats), "--resets", str(resets)],
                              env=environment, capture_output=True, text=True, check=True, cwd=root)
        counts.append(int(re.search(r"I\s+refs:\s+([\d,]+)", done.stderr).group(1).replace(",", "")))
        steps = int(done.stdout.splitlines()[-1])
    return (counts[0] - counts[1]) / (INSTRUCTION_REPEATS * steps)


def report_instructions(env_id: str, against: Path | None) -> None:
    print(f"{env_id}: instructions per step (valgrind; deterministic)")
    for observe, label in ((True, "with every view"), (False, "observe=False")):
        mine = instructions_in(HERE, env_id, observe)
        text = f"  {label:<28} {mine / 1000:8.1f}k"
        if against is not None:
            theirs = instructions_in(against.resolve(), env_id, observe)
            text += f"  against {theirs / 1000:8.1f}k: this checkout runs {theirs / mine:.2f}x fewer"
        print(text)


def measure(env_id: str, repeats: int) -> dict[str, list[float]]:
    """Every per-step figure of one environment (the child's work when comparing checkouts)."""
    traces = champion_traces(env_id)
    return {"observed": step_micros(traces, True, repeats), "unobserved": step_micros(traces, False, repeats),
            "floor": floor_micros(aaos.spec(env_id).roles, repeats)}


def measure_in(root: Path, env_id: str, repeats: int) -> dict[str, list[float]]:
    """measure() run in a subprocess that imports aaos from the checkout at `root`."""
    environment = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, __file__, "--child", env_id, "--repeats", str(repeats)], env=environment,
                         capture_output=True, text=True, check=True, cwd=root).stdout
    return json.loads(out.splitlines()[-1])


def _line(label: str, figures: list[float], budget: float | None = None) -> str:
    best, median = min(figures), statistics.median(figures)
    text = f"  {label:<28} best {best:7.1f} µs ({1e6 / best:9,.0f} steps/s)  median {median:7.1f} µs"
    if budget is not None:
        text += f"  [budget <= {budget:.0f} µs: {'meets' if best <= budget else 'MISSES'}]"
    return text


def report(env_id: str, figures: dict[str, list[float]], other: dict[str, list[float]] | None) -> None:
    print(f"{env_id}:")
    print(_line("with every view", figures["observed"], BUDGET_OBSERVED_US))
    print(_line("observe=False", figures["unobserved"], BUDGET_UNOBSERVED_US))
    print(_line("protocol floor", figures["floor"]))
    if other is not None:
        for key, label in (("observed", "with every view"), ("unobserved", "observe=False")):
            ratio = min(other[key]) / min(figures[key])
            paired = paired_ratios(figures[key], other[key])
            print(_line(f"--against: {label}", other[key]) + f"  (this checkout {ratio:.2f}x as fast; paired "
                  f"{statistics.median(paired):.2f}x, {min(paired):.2f}-{max(paired):.2f})")


def paired_ratios(mine: list[float], theirs: list[float]) -> list[float]:
    """The speed-up of each alternation (best of its PAIRED repeats each side, measured back to back), so that
    the machine's drift over a long run, which moves both sides alike, cancels out."""
    return [min(theirs[i:i + PAIRED]) / min(mine[i:i + PAIRED]) for i in range(0, min(len(mine), len(theirs)), PAIRED)]


def episode_seconds(repeats: int) -> tuple[float, float]:
    """One org full_episode with the champion choosing actions from observations."""
    times = []
    for i in range(repeats):
        start = time.perf_counter()
        _play(("product_launch_failure", i))
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def idle_env_bytes(count: int = 200) -> float:
    """Memory held per org environment after reset (its world, ledger and cached observation)."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    envs = []
    scenarios = [s["id"] for s in aaos.list_scenarios()]
    for i in range(count):
        env = aaos.make("full_episode", scenario=scenarios[i % len(scenarios)], seed=i)
        env.reset()
        envs.append(env)
    gc.collect()
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return used / len(envs)


def _play(job: tuple[str, int]) -> float:
    """One champion org full_episode on (scenario, seed); returns its score."""
    scenario, seed = job
    env = aaos.make("full_episode", scenario=scenario, seed=seed)
    policy = aaos.policies.make("heuristic")
    observation = env.reset()
    while True:
        result = env.step(policy.act(observation))
        observation = result.observation
        if result.done:
            return result.info["score"]


def thousand_episodes(episodes: int, workers: int) -> tuple[float, float]:
    """Wall time and mean score of `episodes` champion org full_episode runs over all scenarios."""
    scenarios = [s["id"] for s in aaos.list_scenarios()]
    jobs = [(scenarios[i % len(scenarios)], seed) for i, seed in enumerate(split_seeds("train", episodes))]
    start = time.perf_counter()
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            scores = list(pool.map(_play, jobs, chunksize=25))
    else:
        scores = [_play(job) for job in jobs]
    return time.perf_counter() - start, statistics.mean(scores)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repeats and episodes")
    parser.add_argument("--env", action="append", help="an environment id (repeatable; default: all)")
    parser.add_argument("--against", type=Path, help="another checkout's root, measured interleaved with this one")
    parser.add_argument("--steps-only", action="store_true", help="only the per-step figures")
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions per step with valgrind instead of timing (per-step figures only)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--child-replay", help=argparse.SUPPRESS)
    parser.add_argument("--observe", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--repeats", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--resets", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    repeats = args.repeats or (3 if args.quick else 15)
    if args.child:
        print(json.dumps(measure(args.child, repeats)))
        return
    if args.child_replay:
        print(replay(args.child_replay, bool(args.observe), repeats, args.resets))
        return
    if args.instructions:
        for env_id in args.env or aaos.env_ids():
            report_instructions(env_id, args.against)
        return

    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    for env_id in args.env or aaos.env_ids():
        if args.against is None:
            report(env_id, measure(env_id, repeats), None)
            continue
        mine: dict[str, list[float]] = {}
        theirs: dict[str, list[float]] = {}
        for _ in range(max(1, repeats // PAIRED)):  # alternate the two checkouts, a few repeats each
            for root, into in ((HERE, mine), (args.against.resolve(), theirs)):
                for key, values in measure_in(root, env_id, PAIRED).items():
                    into.setdefault(key, []).extend(values)
        report(env_id, mine, theirs)
    print(f"load average after:  {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.steps_only:
        return

    best, median = episode_seconds(repeats)
    print(f"champion org full_episode (50 steps, policy included): best {best * 1000:.1f} ms  "
          f"median {median * 1000:.1f} ms")
    per_env = idle_env_bytes()
    verdict = "meets" if per_env <= TARGETS["idle_env_bytes"] else "MISSES"
    print(f"memory per reset org env: {per_env / 1024:.1f} KiB  (target <= 1 MB: {verdict})")
    episodes = 200 if args.quick else 1000
    for workers in (1, 2):
        seconds, score = thousand_episodes(episodes, workers)
        verdict = "meets" if seconds * 1000 / episodes <= TARGETS["thousand_episodes_s"] else "MISSES"
        print(f"{episodes} champion org full_episode runs, {workers} process(es): {seconds:6.1f} s  "
              f"mean score {score:.3f}  (target 1,000 in <= 30 s on 2 cores: {verdict})")


if __name__ == "__main__":
    main()
