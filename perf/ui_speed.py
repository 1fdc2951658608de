"""Server time of the Space's handlers, against the budget in docs/performance.md (step callback <= 30 ms).

    python perf/ui_speed.py            # every scenario, full_episode, 3 episodes each
    python perf/ui_speed.py --quick    # one episode per scenario

Calls the handlers exactly as the layout does (no browser, no network): Step with a queued action and the
other roles following the champion, one streamed Run step, Reset, and queueing an action (valid and not).
The step figures include everything the handler renders: six role cards, the world, the timeline, the chart
frames, the tables and the trajectory record with its state hash. Figures are per call, over all calls;
the machine is shared, so the median is the figure to compare and the p95 shows the noise.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import pandas as pd

import aaos
from aaos.ui import play_tab
from aaos.ui.session import Session

BUDGET_MS = 30.0
TASK = "full_episode"
QUERY = {"action_type": "query_metrics", "payload": {"metric": "error_rate"}}
BAD = {"action_type": "delegate_task", "payload": {"task_id": "task_nope", "to": "engineer"}}


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return (time.perf_counter() - start) * 1000, value


def payload_bytes(outputs: dict[str, Any]) -> int:
    """Rough size of what the handler sends to the browser: HTML text and table/chart cells as JSON."""
    size = 0
    for output in outputs.values():
        value = output.get("value") if isinstance(output, dict) else output  # a chart comes as gr.update(value=...)
        if isinstance(value, str):
            size += len(value.encode())
        elif isinstance(value, pd.DataFrame):
            size += len(value.to_json(orient="split").encode())
    return size


def new_session(scenario: str, seed: int) -> Session:
    outputs = play_tab.reset(None, None, aaos.DEFAULT_ENV, TASK, scenario, seed, "engineer", False)
    return outputs["session"]


def step(session: Session) -> dict[str, Any]:
    """Step as the layout calls it, the roles without a queued action decided by the champion (the agent picked
    under Agent run); the step's last update."""
    return list(play_tab.step(None, session, "agent", "engineer", None, False, "heuristic"))[-1]


def measure(episodes: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"step": [], "run_step": [], "reset": [], "queue_ok": [], "queue_bad": [],
                                     "step_bytes": []}
    scenarios = [s["id"] for s in aaos.list_scenarios()]
    for seed in range(episodes):
        for scenario in scenarios:
            session = new_session(scenario, seed)
            elapsed, _ = timed(lambda s=session, sc=scenario, sd=seed: play_tab.reset(
                None, s, aaos.DEFAULT_ENV, TASK, sc, sd, "engineer", False))
            times["reset"].append(elapsed)
            while not session.done:
                slots = [None] * play_tab.SLOTS + [""] * play_tab.SLOTS
                elapsed, _ = timed(lambda s=session, sl=slots: play_tab.queue_action(
                    None, s, "engineer", None, True, json.dumps(QUERY), *sl))
                times["queue_ok"].append(elapsed)
                elapsed, _ = timed(lambda s=session, sl=slots: play_tab.queue_action(
                    None, s, "product_manager", None, True, str(BAD).replace("'", '"'), *sl))
                times["queue_bad"].append(elapsed)
                elapsed, outputs = timed(lambda s=session: step(s))
                times["step"].append(elapsed)
                times["step_bytes"].append(float(payload_bytes(outputs)))
            session = new_session(scenario, seed)
            runs = play_tab.run_agent(None, session, "heuristic", 0, "engineer", None, False)
            while True:
                elapsed, outputs = timed(lambda r=runs: next(r, None))
                if outputs is None:
                    break
                times["run_step"].append(elapsed)
    return times


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one episode per scenario")
    args = parser.parse_args()
    measure(1)  # warm up imports and caches
    times = measure(1 if args.quick else 3)
    print(f"Space handlers, {TASK}, every scenario ({len(times['step'])} steps); milliseconds per call")
    print(f"{'handler':<34}{'median':>9}{'p95':>9}{'max':>9}")
    labels = {
        "step": "Step (queued + champion for others)",
        "run_step": "Run, one streamed step",
        "reset": "Reset",
        "queue_ok": "Queue a valid action",
        "queue_bad": "Queue an invalid action",
    }
    for key, label in labels.items():
        values = times[key]
        print(f"{label:<34}{statistics.median(values):>9.2f}{percentile(values, 0.95):>9.2f}{max(values):>9.2f}")
    step_median = statistics.median(times["step"])
    verdict = "within" if step_median <= BUDGET_MS else "OVER"
    print(f"\nStep callback median {step_median:.2f} ms: {verdict} the {BUDGET_MS:.0f} ms budget "
          f"(p95 {percentile(times['step'], 0.95):.2f} ms)")
    print(f"Step output size: median {statistics.median(times['step_bytes']) / 1024:.1f} KiB of HTML and table data")


if __name__ == "__main__":
    main()
