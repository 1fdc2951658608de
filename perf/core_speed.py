"""Speed and memory of the simulation core, against the budgets in the README's Speed table.

    python perf/core_speed.py            # all figures
    python perf/core_speed.py --quick    # fewer repeats and episodes

Timings repeat each measurement and report the best and the median repeat: this machine is shared and
noisy, and the best repeat is the one least disturbed by other work.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
import tracemalloc
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import aaos
from aaos.core.seeding import split_seeds

TARGETS = {
    "raw_steps_per_s": 20_000,
    "observed_steps_per_s": 5_000,
    "thousand_episodes_s": 30.0,
    "idle_env_bytes": 1_000_000,
}


def champion_trace(task: str, scenario: str, seed: int) -> list[dict[str, Any]]:
    """The joint actions the champion takes in one episode (replayed for pure environment timing)."""
    env = aaos.make(task, scenario=scenario, seed=seed)
    policy = aaos.policies.make("heuristic")
    observation = env.reset()
    actions = []
    while True:
        joint = policy.act(observation)
        actions.append(joint)
        result = env.step(joint)
        observation = result.observation
        if result.done:
            return actions


def steps_per_second(observe: bool, repeats: int) -> tuple[float, float]:
    """Joint steps/s replaying champion traces on every scenario (reset time excluded)."""
    traces = {s["id"]: champion_trace("full_episode", s["id"], 0) for s in aaos.list_scenarios()}
    envs = {sid: aaos.make("full_episode", scenario=sid, seed=0) for sid in traces}
    rates = []
    for _ in range(repeats):
        elapsed = 0.0
        steps = 0
        for sid, trace in traces.items():
            env = envs[sid]
            env.reset()
            start = time.perf_counter()
            for joint in trace:
                env.step(joint, observe=observe)
            elapsed += time.perf_counter() - start
            steps += len(trace)
        rates.append(steps / elapsed)
    return max(rates), statistics.median(rates)


def episode_seconds(repeats: int) -> tuple[float, float]:
    """One full_episode with the champion choosing actions from observations."""
    times = []
    for i in range(repeats):
        start = time.perf_counter()
        _play(("product_launch_failure", i))
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def idle_env_bytes(count: int = 200) -> float:
    """Memory held per environment after reset (its world, ledger and cached observation)."""
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
    """One champion full_episode on (scenario, seed); returns its score."""
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
    """Wall time and mean score of `episodes` champion full_episode runs over all scenarios."""
    scenarios = [s["id"] for s in aaos.list_scenarios()]
    jobs = [(scenarios[i % len(scenarios)], seed) for i, seed in enumerate(split_seeds("train", episodes))]
    start = time.perf_counter()
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            scores = list(pool.map(_play, jobs, chunksize=25))
    else:
        scores = [_play(job) for job in jobs]
    return time.perf_counter() - start, statistics.mean(scores)


def _verdict(value: float, target: float, higher_is_better: bool = True) -> str:
    ok = value >= target if higher_is_better else value <= target
    return "meets" if ok else "MISSES"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    repeats = 3 if args.quick else 15
    episodes = 200 if args.quick else 1000

    best, median = steps_per_second(False, repeats)
    print(f"joint steps/s, no observation:   best {best:9,.0f}  median {median:9,.0f}  "
          f"(target >= {TARGETS['raw_steps_per_s']:,}: {_verdict(best, TARGETS['raw_steps_per_s'])})")
    best, median = steps_per_second(True, repeats)
    print(f"joint steps/s, six role views:   best {best:9,.0f}  median {median:9,.0f}  "
          f"(target >= {TARGETS['observed_steps_per_s']:,}: {_verdict(best, TARGETS['observed_steps_per_s'])})")
    best, median = episode_seconds(repeats)
    print(f"champion full_episode (50 steps): best {best * 1000:7.1f} ms  median {median * 1000:7.1f} ms")
    per_env = idle_env_bytes()
    verdict = _verdict(per_env, TARGETS["idle_env_bytes"], False)
    print(f"memory per reset env:            {per_env / 1024:7.1f} KiB  "
          f"(target <= {TARGETS['idle_env_bytes'] / 1e6:.0f} MB: {verdict})")
    for workers in (1, 2):
        seconds, score = thousand_episodes(episodes, workers)
        verdict = _verdict(seconds * 1000 / episodes, TARGETS["thousand_episodes_s"], False)
        print(f"{episodes} champion full_episode runs, {workers} process(es): {seconds:6.1f} s  "
              f"mean score {score:.3f}  (target 1,000 in <= 30 s on 2 cores: {verdict})")


if __name__ == "__main__":
    main()
