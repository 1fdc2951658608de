"""How well the benchmark overlaps model calls: episodes against an endpoint with a fixed latency.

    python perf/llm_overlap.py [--episodes 20] [--concurrency 32] [--latency 0.2]

The endpoint is the FAULT-INJECTING FAKE from tests/fake_openai.py, in its own process, in "ok" mode with
a fixed delay (it answers each request with the first legal action). The ideal wall time is
calls x latency / concurrency; the target is within 1.25x of it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fake_openai import serve_in_subprocess

from aaos.agents.llm import LLMConfig
from aaos.bench.runner import Job, run
from aaos.policies import PolicySpec

TARGET_RATIO = 1.25


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.2)
    args = parser.parse_args()
    with serve_in_subprocess(["ok"], args.latency) as url, tempfile.TemporaryDirectory() as folder:
        spec = PolicySpec("fake", "llm", LLMConfig("fake", url, timeout_s=30.0))
        jobs = [Job("fake", "org", "org_simulation", "product_launch_failure", seed) for seed in range(args.episodes)]
        started = time.perf_counter()
        records = run(jobs, {"fake": spec}, Path(folder) / "results.jsonl", args.concurrency)
        elapsed = time.perf_counter() - started
    calls = sum(r["llm"]["calls"] for r in records)
    ideal = calls * args.latency / args.concurrency
    ratio = elapsed / ideal
    verdict = "meets" if ratio <= TARGET_RATIO else "MISSES"
    print(f"{len(records)} episodes, {calls} calls of {args.latency * 1000:.0f} ms at concurrency {args.concurrency}: "
          f"{elapsed:.2f} s, ideal {ideal:.2f} s, ratio {ratio:.2f} (target <= {TARGET_RATIO}: {verdict})")


if __name__ == "__main__":
    main()
