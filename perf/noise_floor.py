"""The benchmark's noise floor per environment, task and split, measured: what `aaos bench`'s and the Space's
default episode counts (aaos.bench.cli.DEFAULT_EPISODES, aaos.ui.benchmark.DEFAULT_EPISODES) are chosen from.

    python perf/noise_floor.py                 # 16 seeds of each split per task and scenario, every environment
    python perf/noise_floor.py --seeds 8 --env org

Plays the champion, random legal actions and the no-op on every task x scenario x split (SEEDS seeds each, as
`aaos bench` plays them, public holdout) and prints, per environment, task and split: the SD of the paired
champion - random differences and of every ladder pair pooled (as aaos.bench.paired.noise_floor pools them); from
the champion - random SD, the difference a few seed counts detect at 80 % power (alpha 0.05, two-sided) and the
seeds per scenario needed to detect 0.05.
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path

import aaos
from aaos.bench import paired
from aaos.bench.runner import plan_jobs, run
from aaos.policies import baseline

LADDER = ("heuristic", "random", "noop")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=16, help="seeds of each split per task and scenario")
    parser.add_argument("--env", action="append", help="repeatable (default: every environment)")
    parser.add_argument("--defaults", type=int, nargs="*", default=[2, 5, 10],
                        help="seeds per scenario to show the floor of")
    args = parser.parse_args()
    z = statistics.NormalDist().inv_cdf(1 - paired.ALPHA / 2) + statistics.NormalDist().inv_cdf(paired.POWER)
    print(f"{'env':15} {'task':20} {'split':8} {'scen':>4} {'sd c-r':>7} {'sd pool':>7} "
          + " ".join(f"{'mde@' + str(n):>7}" for n in args.defaults) + f" {'seeds/scen for 0.05':>20}")
    for env in args.env or aaos.env_ids():
        tasks = [t.id for t in aaos.spec(env).tasks]
        scenarios = [s.id for s in aaos.spec(env).scenarios]
        jobs = plan_jobs(LADDER, tasks, scenarios, args.seeds, ("train", "holdout"), env)
        with tempfile.TemporaryDirectory() as folder:
            records = run(jobs, {name: baseline(name) for name in LADDER}, Path(folder) / "results.jsonl", 1)
        scores: dict[tuple[str, str], dict[str, dict[paired.EpisodeKey, float]]]
        scores = defaultdict(lambda: defaultdict(dict))
        for record in records:
            scores[(record["task"], record["split"])][record["policy"]][paired.episode_key(record)] = record["score"]
        for (task, split), by_policy in sorted(scores.items()):
            keys = sorted(by_policy["heuristic"])
            cells = len({key[1] for key in keys})
            champion_random = [by_policy["heuristic"][k] - by_policy["random"][k] for k in keys]
            pairs = [[by_policy[a][k] - by_policy[b][k] for k in keys] for a, b in
                     (("heuristic", "random"), ("heuristic", "noop"), ("random", "noop"))]
            sd = statistics.stdev(champion_random)
            pooled = math.sqrt(statistics.mean(statistics.variance(p) for p in pairs))
            floors = " ".join(f"{z * sd / math.sqrt(n * cells):7.3f}" for n in args.defaults)
            needed = math.ceil((z * sd / paired.DETECTABLE) ** 2)
            print(f"{env:15} {task:20} {split:8} {cells:4d} {sd:7.3f} {pooled:7.3f} {floors} "
                  f"{math.ceil(needed / cells):20d}")


if __name__ == "__main__":
    main()
