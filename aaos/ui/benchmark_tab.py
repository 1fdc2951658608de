"""The Benchmark tab: pick policies, tasks, scenarios and seeds; run with progress; the leaderboard, its chart,
the promotion gate and the downloads, with their events and handlers (the run itself is aaos.ui.benchmark's).

Handlers return their outputs by name (wiring.Outputs). Bad settings, or a benchmark already running in the tab,
give a message and change nothing.
"""

from __future__ import annotations

import html
import time
from collections.abc import Iterator

import gradio as gr
import pandas as pd

from aaos.bench import paired
from aaos.bench.paired import plural
from aaos.policies import display_name
from aaos.ui import agents, benchmark, charts, formatting, play_tab, prose
from aaos.ui.benchmark import BenchmarkRun
from aaos.ui.session import Session
from aaos.ui.wiring import Outputs, Ui, current, live

RESULTS: tuple[str, ...] = ("bench_status", "leaderboard", "bench_noise", "bench_pairs", "bench_chart", "gate",
                             "bench_files")
"""What a benchmark run renders."""
BENCH_POLL_S = 0.5
"""How often a running benchmark's progress is shown."""
CANDIDATE_INFO = "One of the ticked policies; it follows the ticks."


def build(ui: Ui, env_id: str) -> None:
    """The tab, inside the page's gr.Tabs."""
    tasks, scenarios = play_tab.episode_choices(env_id)
    installed = agents.local_problem() is None
    with gr.Tab("Benchmark", id="benchmark", elem_id="aaos-tab-benchmark"):
        with gr.Row(equal_height=False):
            ui["bench_policies"] = gr.CheckboxGroup(
                benchmark.policy_choices(installed), value=list(benchmark.DEFAULT_POLICIES), label="Policies",
                info=benchmark.policies_info(installed), scale=3, elem_id="aaos-bench-policies")
            ui["bench_tasks"] = gr.CheckboxGroup(tasks, value=[tasks[0][1]], label="Tasks", scale=2,
                                                 elem_id="aaos-bench-tasks")
            ui["bench_scenarios"] = gr.CheckboxGroup(scenarios, value=[value for _, value in scenarios],
                                                     label="Scenarios", scale=3, elem_id="aaos-bench-scenarios")
        with gr.Row(equal_height=True):
            ui["bench_splits"] = gr.CheckboxGroup(list(benchmark.SPLITS), value=[v for _, v in benchmark.SPLITS],
                                                  label="Seeds", elem_id="aaos-bench-splits")
            # No rounding: make_plan refuses a fraction with a message rather than running another number.
            ui["bench_episodes"] = gr.Number(benchmark.DEFAULT_EPISODES, label="Episodes per split",
                                             elem_id="aaos-bench-episodes")
            ui["bench_concurrency"] = gr.Slider(1, benchmark.MAX_CONCURRENCY, value=benchmark.DEFAULT_CONCURRENCY,
                                                step=1, label="Concurrency", elem_id="aaos-bench-concurrency")
            ui["bench_candidate"] = gr.Dropdown(benchmark.candidate_choices(benchmark.DEFAULT_POLICIES),
                                                value=benchmark.DEFAULT_CANDIDATE,
                                                label="Gate candidate (vs the champion)", info=CANDIDATE_INFO,
                                                elem_id="aaos-bench-candidate")
        ui["bench_plan"] = gr.HTML(choose_env(env_id)["bench_plan"], elem_id="aaos-bench-plan")
        with gr.Row():
            ui["bench_run"] = gr.Button("Run benchmark", variant="primary", elem_id="aaos-bench-run")
            ui["bench_stop"] = gr.Button("Stop", variant="stop", elem_id="aaos-bench-stop")
        ui["bench_status"] = gr.HTML(formatting.bench_status(0, 0, prose.BENCH_INTRO), elem_id="aaos-bench-status")
        gr.Markdown(f"### {prose.LEADERBOARD_TITLE}", elem_classes=["aaos-panel-title"])
        ui["leaderboard"] = gr.HTML(formatting.leaderboard([]), elem_id="aaos-leaderboard")
        ui["bench_noise"] = gr.HTML(elem_id="aaos-bench-noise")
        with gr.Accordion("Paired comparisons: why policies share a rank", open=False, elem_id="aaos-bench-pairs-box"):
            gr.Markdown(paired.RANKS_METHOD, elem_classes=["aaos-help"])
            ui["bench_pairs"] = gr.Dataframe(headers=list(benchmark.PAIRWISE_COLUMNS), interactive=False, wrap=True,
                                             elem_id="aaos-bench-pairs")
        with gr.Row(equal_height=False):
            with gr.Column(scale=3):
                ui["bench_chart"] = gr.Plot(show_label=False, elem_id="aaos-bench-chart")
            with gr.Column(scale=2):
                ui["gate"] = gr.HTML(elem_id="aaos-gate")
                ui["bench_files"] = gr.File(label="Benchmark files", file_count="multiple", interactive=False,
                                            visible=False, elem_id="aaos-bench-files")


def wire(ui: Ui) -> None:
    """Connect the tab's events (and the sidebar's environment choice) to their handlers."""
    settings = ("env", "bench_policies", "bench_tasks", "bench_scenarios", "bench_splits", "bench_episodes",
                "bench_concurrency", "bench_candidate", "mode", "model_name", "base_url", "token")
    ui.event(ui["env"].input, choose_env, ("env",), ("bench_tasks", "bench_scenarios", "bench_plan"))
    planned = ("env", "bench_policies", "bench_tasks", "bench_scenarios", "bench_splits", "bench_episodes")
    for name in planned[1:]:  # what the server received, shown before Run benchmark
        ui.event(ui[name].input, show_plan, planned, ("bench_plan",))
    ui.event(ui["bench_run"].click, run_benchmark, ("session", *settings), ("session", "bench_candidate", *RESULTS))
    ui.event(ui["bench_stop"].click, stop_benchmark, ("session",), ("bench_status",))
    ui.event(ui["bench_candidate"].input, choose_candidate, ("session", "bench_candidate"), ("gate",))
    ui.event(ui["bench_policies"].input, follow_policies, ("bench_policies", "bench_candidate"), ("bench_candidate",))


def choose_env(env_id: str) -> Outputs:
    """An environment was picked: its tasks and scenarios, the first task and every scenario ticked, and what a
    run would play. Outputs: bench_tasks, bench_scenarios, bench_plan."""
    tasks, scenarios = play_tab.episode_choices(env_id)
    ticked = [value for _, value in scenarios]
    plan = benchmark.preview(env_id, list(benchmark.DEFAULT_POLICIES), [tasks[0][1]], ticked,
                             [v for _, v in benchmark.SPLITS], benchmark.DEFAULT_EPISODES)
    return {"bench_tasks": gr.update(choices=tasks, value=[tasks[0][1]]),
            "bench_scenarios": gr.update(choices=scenarios, value=ticked), "bench_plan": formatting.note(*plan)}


def follow_policies(policies: list[str] | None, candidate: str | None) -> Outputs:
    """The ticked policies changed: the gate candidate is one of them (the one chosen if it still is), never the
    champion; none when only the champion is ticked. Outputs: bench_candidate."""
    ticked = policies or []
    return {"bench_candidate": gr.update(choices=benchmark.candidate_choices(ticked),
                                         value=benchmark.candidate_for(ticked, candidate))}


def show_plan(env_id: str, policies: list[str] | None, tasks: list[str] | None, scenarios: list[str] | None,
              splits: list[str] | None, episodes: float | None) -> Outputs:
    """A setting changed: how many episodes Run benchmark will play, or what to fix. Outputs: bench_plan."""
    plan = benchmark.preview(env_id, policies or [], tasks or [], scenarios or [], splits or [], episodes)
    return {"bench_plan": formatting.note(*plan)}


def _playing(run: BenchmarkRun) -> str:
    """The episode in flight the longest, at its step, and how many more are in flight ("" when none is)."""
    flight = run.in_flight()
    if not flight:
        return ""
    job, step = flight[0]
    more = f" (and {plural(len(flight) - 1, 'more episode')} in flight)" if len(flight) > 1 else ""
    return (f" Playing {display_name(job.policy)}, "
            f"{formatting.episode_name(run.plan.env, job.task, job.scenario)}, seed {job.seed}: step {step} of "
            f"{benchmark.horizon(job)}{more}.")


def _progress(run: BenchmarkRun) -> str:
    elapsed = f"{time.monotonic() - run.started:.0f} s"
    if run.stopping:
        body = f"Stopping after the episodes in flight… {elapsed}"
    elif run.state != "running":
        body = f"Starting the {agents.LOCAL_LABEL} server (first use only)… {elapsed}"
    else:
        body = f"Running… {elapsed}, {run.steps_done} of {run.steps_total} steps.{_playing(run)}"
        if run.last is not None:
            last = run.last
            score = f"score {last['score']:.3f}" if last.get("error") is None else "failed"
            body += (f" Latest: {display_name(last['policy'])}, "
                     f"{formatting.episode_name(run.plan.env, last['task'], last['scenario'])}, seed {last['seed']}: "
                     f"{score}.")
    failing = run.model_calls.problem()
    return formatting.bench_status(run.finished, run.total, body + (failing or ""), "warn" if failing else "info",
                                   run.steps_done / run.steps_total if run.steps_total else None)


def _summary(run: BenchmarkRun) -> str:
    episodes = sum(row["episodes"] for row in run.rows)
    if run.state == "failed":
        body, kind = f"The benchmark failed: {run.error}", "error"
    elif run.state == "stopped":
        kept = (f"the results cover the {plural(episodes, 'finished episode')}" if episodes else
                "no episode had finished")
        body, kind = f"Stopped after {run.elapsed_s:.1f} s: {kept}.", "info"
    else:
        body, kind = (f"Done: {plural(episodes, 'episode')} in {run.elapsed_s:.1f} s. Download the results under "
                      "Benchmark files.", "ok")
    if run.holdout_salt and "holdout" in {row["split"] for row in run.rows}:
        body += (f" Salted holdout: drawn with a secret salt for this run alone (fingerprint {run.holdout_salt}), so "
                 "no agent can have seen its episodes.")
    failing = run.model_calls.problem()
    if failing:
        body, kind = body + failing, "error" if kind == "error" else "warn"
    if run.failures:
        first = run.failures[0]
        body += (f" {plural(len(run.failures), 'episode')} failed, the first "
                 f"({display_name(first['policy'])}, "
                 f"{formatting.episode_name(run.plan.env, first['task'], first['scenario'])}) with: {first['error']}")
        kind = "error"
    return formatting.bench_status(run.finished, run.total, body, kind)


def _gate(run: BenchmarkRun, candidate: str | None) -> str:
    return formatting.gate_verdict(*benchmark.gate_for(run, candidate)) if run.rows else ""


def _noise(run: BenchmarkRun) -> str:
    """The noise floor of every task under the leaderboard (or why a split was not ranked), "" before results."""
    lines = paired.notes(run.standings)
    if not lines:
        return ""
    items = "".join(f"<li>{html.escape(line, quote=False)}</li>" for line in lines)
    return (f'<div class="aaos-help" id="aaos-noise-floor"><p>{html.escape(paired.NOISE_METHOD, quote=False)}</p>'
            f"<ul>{items}</ul></div>")


def _pairs(run: BenchmarkRun) -> pd.DataFrame:
    return pd.DataFrame(benchmark.pairwise_table(run.standings), columns=list(benchmark.PAIRWISE_COLUMNS))


def _results(run: BenchmarkRun, candidate: str | None) -> Outputs:
    """A finished benchmark (RESULTS)."""
    ranked = benchmark.ranked(run.rows, run.standings)
    charted = [row for row in ranked if formatting.own_score(row)]  # no bar of a score the policy did not make
    files = [str(path) for path in run.files()]
    return {"bench_status": _summary(run), "leaderboard": formatting.leaderboard(ranked), "bench_noise": _noise(run),
            "bench_pairs": _pairs(run), "bench_chart": charts.leaderboard_figure(charted) if charted else None,
            "gate": _gate(run, candidate), "bench_files": gr.update(value=files or None, visible=bool(files))}


def run_benchmark(request: gr.Request, session: Session | None, env_id: str, policies: list[str] | None,
                  tasks: list[str] | None, scenarios: list[str] | None, splits: list[str] | None,
                  episodes: float | None, concurrency: float | None, candidate: str | None, mode: str,
                  model: str | None, base_url: str | None, token: str | None) -> Iterator[Outputs]:
    """Benchmark the ticked policies on the ticked tasks, scenarios and seed splits in a worker thread, into a new
    folder of the tab's; stream its progress, then show the leaderboard with its noise floors and paired
    comparisons, the chart, the gate verdict for `candidate` (one of the run's policies: benchmark.candidate_for)
    and the downloads. Outputs: session, bench_candidate, RESULTS."""
    session = current(session, request)
    policies = policies or []
    endpoint = agents.endpoint(model, base_url, token, mode) if "openai" in policies else None
    plan = benchmark.make_plan(env_id, policies, tasks or [], scenarios or [], splits or [], episodes, concurrency,
                               mode, endpoint)
    with session.lock:
        if session.benchmarking:
            plan = "A benchmark is already running in this tab: wait for it, or press Stop."
        elif isinstance(plan, benchmark.Plan):
            run = session.start_benchmark(plan)
    if isinstance(plan, str):
        yield {"session": session, "bench_status": formatting.bench_status(0, 0, plan, "error")}
        return
    candidate = benchmark.candidate_for(run.plan.policies, candidate)
    yield {"session": session, "bench_status": _progress(run), "leaderboard": formatting.leaderboard([]),
           "bench_noise": "", "bench_pairs": _pairs(run), "bench_chart": None, "gate": "",
           "bench_files": gr.update(value=None, visible=False),
           "bench_candidate": gr.update(choices=benchmark.candidate_choices(run.plan.policies), value=candidate)}
    while not run.done.wait(BENCH_POLL_S):
        yield {"session": session, "bench_status": _progress(run)}
    yield {"session": session, **_results(run, candidate)}


def stop_benchmark(session: Session | None) -> Outputs:
    """Stop this tab's benchmark after the episodes in flight; the run shows what it kept in its last update.
    Outputs: bench_status (unchanged unless no benchmark is running)."""
    session = live(session)
    run = session.benchmark if session is not None else None
    if run is None or run.done.is_set():
        return {"bench_status": formatting.bench_status(0, 0, prose.NO_BENCHMARK)}
    run.stop()
    return {}


def choose_candidate(session: Session | None, candidate: str | None) -> Outputs:
    """The gate candidate changed: the verdict from the latest benchmark, if it has finished. Outputs: gate."""
    session = live(session)
    run = session.benchmark if session is not None else None
    if run is None or not run.done.is_set():
        return {}
    return {"gate": _gate(run, candidate)}
