"""The Space's layout: builds the components and wires each event to a handler in callbacks.py.

Named components live in one dict (`Ui`), keyed by the names callbacks.py uses for its outputs. Components
carry stable elem_ids (aaos-*) for the CSS in assets/ and for the browser tests.
"""

from __future__ import annotations

import gradio as gr

import aaos
from aaos.core.trajectory import EpisodeMeta
from aaos.data import data_dir
from aaos.ui import agents, benchmark, callbacks, formatting
from aaos.ui.session import default_meta

ASSETS = data_dir("assets")
CSS = ASSETS / "aaos.css"
LOGO = ASSETS / "logo.svg"
CONCURRENCY = 16
"""Events of different tabs run in parallel up to this many per event type; one tab's are serialised by its lock."""
SYSTEM_FONTS = ("ui-sans-serif", "system-ui", "-apple-system", "Segoe UI", "Helvetica", "Arial", "sans-serif")
MONO_FONTS = ("ui-monospace", "SFMono-Regular", "Menlo", "Consolas", "DejaVu Sans Mono", "monospace")
SEED_INFO = "0 to 9999 draw train variants; 10000 and up draw holdout variants."
OTHERS = (("Do nothing (no_op)", "no_op"), ("Follow the champion", "champion"))
MIN_DELAY_S = 0.1
"""The fastest an agent run streams: quicker updates flood the browser, which then reacts late to Stop."""
DEFAULT_AGENT = agents.AGENTS[0][1]

Ui = dict[str, gr.blocks.Block]


def theme() -> gr.themes.Base:
    """A compact, soft indigo theme on system fonts (nothing is fetched from font servers)."""
    return gr.themes.Soft(
        primary_hue="indigo", secondary_hue="sky", neutral_hue="slate", spacing_size="sm", text_size="sm",
        radius_size="md", font=list(SYSTEM_FONTS), font_mono=list(MONO_FONTS),
    ).set(
        block_title_background_fill="transparent", block_title_background_fill_dark="transparent",
        block_title_padding="0", block_title_text_color="*neutral_600", block_title_text_color_dark="*neutral_300",
        block_label_background_fill="transparent", block_label_background_fill_dark="transparent",
    )


def header() -> str:
    """The logo, the title and two lines: what AAOS is, and how to use the Space."""
    return (
        '<div class="aaos-header">' + LOGO.read_text(encoding="utf-8")
        + "<div><h1>AAOS <span>— Autonomous AI Organization Simulator</span></h1>"
        "<p>Six AI roles run a tech organisation through hidden risks, incidents and surprise events; "
        "a five-part reward scores their teamwork.</p>"
        "<p><b>How to use:</b> pick a task and scenario, press <b>Reset</b>, queue actions and press <b>Step</b> — "
        "or <b>Run</b> an agent; the <b>Benchmark</b> tab ranks them.</p></div>"
        '<div class="aaos-links"><a href="/docs" target="_blank">API docs</a></div></div>'
    )


def _title(text: str) -> None:
    gr.Markdown(f"### {text}", elem_classes=["aaos-panel-title"])


def _sidebar(ui: Ui, meta: EpisodeMeta) -> None:
    """Episode controls, the agent run and the downloads."""
    tasks, scenarios = callbacks.episode_choices(meta.env)
    _title("Episode")
    ui["env"] = gr.Dropdown([(aaos.spec(e).title, e) for e in aaos.env_ids()], value=meta.env,
                            label="Environment", elem_id="aaos-env")
    ui["task"] = gr.Dropdown(tasks, value=meta.task, label="Task", elem_id="aaos-task")
    ui["scenario"] = gr.Dropdown(scenarios, value=meta.scenario, label="Scenario", elem_id="aaos-scenario")
    ui["seed"] = gr.Number(meta.seed, precision=0, minimum=0, label="Seed", info=SEED_INFO, elem_id="aaos-seed")
    ui["reset"] = gr.Button("Reset", variant="primary", elem_id="aaos-reset")
    _title("Agent run")
    ui["policy"] = gr.Dropdown(list(agents.AGENTS), value=DEFAULT_AGENT, label="Agent", elem_id="aaos-policy")
    ui["agent_help"] = gr.HTML(formatting.note(*agents.describe(DEFAULT_AGENT)), elem_id="aaos-agent-help")
    _model_settings(ui)
    with gr.Row():
        ui["run"] = gr.Button("Run", variant="primary", elem_id="aaos-run", min_width=80)
        ui["stop"] = gr.Button("Stop", variant="stop", elem_id="aaos-stop", min_width=80)
    ui["delay"] = gr.Slider(MIN_DELAY_S, 1, value=0.3, step=0.05, label="Seconds between steps", elem_id="aaos-delay")
    _title("Downloads")
    ui["export"] = gr.Button("Export trajectory and action log", elem_id="aaos-export")
    ui["files"] = gr.File(label="Episode files", file_count="multiple", interactive=False, visible=False,
                          elem_id="aaos-files")


def _model_settings(ui: Ui) -> None:
    """The language model for a run and the benchmark: the mode (also the local model's) and an OpenAI-compatible
    endpoint. The token is a password field whose value only travels as an input of Run and Run benchmark."""
    with gr.Accordion("Model settings", open=False, elem_id="aaos-model-settings") as box:
        ui["model_box"] = box
        ui["mode"] = gr.Radio(list(agents.MODES), value=agents.MODES[0][1], label="Mode",
                              info="Per role: each role sees only its own view. Both models use it.",
                              elem_id="aaos-mode")
        ui["model_name"] = gr.Textbox(label="Model name", placeholder=agents.MODEL_EXAMPLE, max_length=200,
                                      elem_id="aaos-model-name")
        ui["base_url"] = gr.Textbox(agents.DEFAULT_BASE_URL, label="Base URL", max_length=500, elem_id="aaos-base-url")
        ui["token"] = gr.Textbox(type="password", label="API token", placeholder="kept in this tab only",
                                 max_length=500, elem_id="aaos-token")


def _play_tab(ui: Ui, roles: tuple[str, ...]) -> None:
    """The action form, the queue, and every role's view as a card."""
    with gr.Row(equal_height=False):
        with gr.Column(scale=3, min_width=300, elem_id="aaos-composer"):
            with gr.Row():
                ui["role"] = gr.Dropdown([(formatting.humanize(r), r) for r in roles], value=roles[0],
                                         label="Role", elem_id="aaos-role")
                ui["action_type"] = gr.Dropdown(label="Action", elem_id="aaos-action")
            ui["action_help"] = gr.HTML(elem_id="aaos-action-help")
            with gr.Row():
                for i, name in enumerate(callbacks.CHOICE_SLOTS):
                    ui[name] = gr.Dropdown(label="", visible=False, elem_id=f"aaos-choice-{i}")
                for i, name in enumerate(callbacks.TEXT_SLOTS):
                    ui[name] = gr.Textbox(label="", visible=False, max_length=500, elem_id=f"aaos-text-{i}")
            ui["raw_json"] = gr.Code(language="json", label="Action as raw JSON", lines=5, interactive=True,
                                     visible=False, elem_id="aaos-raw")
            with gr.Row():
                ui["raw"] = gr.Checkbox(False, label="Edit as raw JSON", elem_id="aaos-raw-toggle")
                ui["queue_action"] = gr.Button("Queue action", elem_id="aaos-queue-button")
        with gr.Column(scale=2, min_width=260, elem_id="aaos-queue-panel"):
            ui["queue"] = gr.Dataframe(headers=list(formatting.QUEUE_COLUMNS), label="Queued actions",
                                       interactive=False, wrap=True, max_height=170, elem_id="aaos-queue")
            ui["others"] = gr.Radio(list(OTHERS), value=OTHERS[0][1], label="Roles without a queued action",
                                    elem_id="aaos-others")
            with gr.Row():
                ui["clear"] = gr.Button("Clear queue", elem_id="aaos-clear")
                ui["step"] = gr.Button("Step", variant="primary", elem_id="aaos-step")
    ui["message"] = gr.HTML(elem_id="aaos-message")
    ui["hints"] = gr.HTML(elem_id="aaos-hints")
    ui["cards"] = gr.HTML(elem_id="aaos-cards")


def _world_tab(ui: Ui) -> None:
    with gr.Row():
        with gr.Column(scale=3):
            ui["world"] = gr.HTML(elem_id="aaos-world-box")
        with gr.Column(scale=2):
            _title("Event timeline")
            ui["timeline"] = gr.HTML(elem_id="aaos-timeline-box")


def _reward_tab(ui: Ui) -> None:
    ui["reward_plot"] = gr.LinePlot(x="step", y="value", color="series", y_lim=[0, 1], height=300,
                                    title="Reward components and composite score", x_title="Step",
                                    y_title="Value", color_title="Component", elem_id="aaos-reward-plot")
    ui["delivery_plot"] = gr.LinePlot(x="step", y="value", color="series", y_lim=[0, 1], height=240,
                                      title="Reward delivered each step: immediate and delayed shares",
                                      x_title="Step", y_title="Reward", color_title="Series",
                                      elem_id="aaos-delivery-plot")


def _logs_tab(ui: Ui) -> None:
    ui["oversight"] = gr.Dataframe(headers=list(formatting.OVERSIGHT_COLUMNS), label="Oversight log",
                                   interactive=False, wrap=True, max_height=260, elem_id="aaos-oversight",
                                   column_widths=["8%", "16%", "22%", "10%", "10%", "34%"])
    ui["actions"] = gr.Dataframe(headers=list(formatting.ACTION_COLUMNS), interactive=False, wrap=True,
                                 label="Action log (newest first, no-ops left out)", max_height=420,
                                 show_search="search", elem_id="aaos-actions",
                                 column_widths=["7%", "14%", "15%", "24%", "10%", "30%"])


def _benchmark_tab(ui: Ui, env_id: str) -> None:
    """Pick policies, tasks, scenarios and seeds; run with progress; the leaderboard, its chart, the gate and the
    downloads."""
    tasks, scenarios = callbacks.bench_choices(env_id)
    installed = agents.local_problem() is None
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
        ui["bench_episodes"] = gr.Number(benchmark.DEFAULT_EPISODES, precision=0, label="Episodes per split",
                                         elem_id="aaos-bench-episodes")
        ui["bench_concurrency"] = gr.Slider(1, benchmark.MAX_CONCURRENCY, value=benchmark.DEFAULT_CONCURRENCY,
                                            step=1, label="Concurrency", elem_id="aaos-bench-concurrency")
        ui["bench_candidate"] = gr.Dropdown(benchmark.candidate_choices(), value=benchmark.DEFAULT_CANDIDATE,
                                            label="Gate candidate (vs the champion)", elem_id="aaos-bench-candidate")
    with gr.Row():
        ui["bench_run"] = gr.Button("Run benchmark", variant="primary", elem_id="aaos-bench-run")
        ui["bench_stop"] = gr.Button("Stop", variant="stop", elem_id="aaos-bench-stop")
    ui["bench_status"] = gr.HTML(formatting.bench_status(0, 0, benchmark.INTRO), elem_id="aaos-bench-status")
    _title("Leaderboard (ranked within each split)")
    ui["leaderboard"] = gr.HTML(formatting.leaderboard([]), elem_id="aaos-leaderboard")
    with gr.Row(equal_height=False):
        with gr.Column(scale=3):
            ui["bench_chart"] = gr.Plot(show_label=False, elem_id="aaos-bench-chart")
        with gr.Column(scale=2):
            ui["gate"] = gr.HTML(elem_id="aaos-gate")
            ui["bench_files"] = gr.File(label="Benchmark files", file_count="multiple", interactive=False,
                                        visible=False, elem_id="aaos-bench-files")


def _wire(blocks: gr.Blocks, ui: Ui, session: gr.State) -> None:
    """Connect every event to its handler; inputs and outputs follow the handlers' signatures."""
    def names(*keys: str) -> list[gr.blocks.Block]:
        return [ui[key] for key in keys]

    slots = names(*callbacks.CHOICE_SLOTS, *callbacks.TEXT_SLOTS)
    composer = names(*callbacks.COMPOSER)
    full = [session, *names(*callbacks.DASHBOARD), *composer]
    form = [session, *names("role", "action_type", "raw")]
    queue_outputs = [session, *names("queue", "cards", "message")]
    episode = [session, *names("env", "task", "scenario", "seed", "role", "raw")]
    model = names("mode", "model_name", "base_url", "token")
    bench = names("env", "bench_policies", "bench_tasks", "bench_scenarios", "bench_splits", "bench_episodes",
                  "bench_concurrency", "bench_candidate")
    quiet = {"api_visibility": "private", "show_progress": "hidden"}

    blocks.load(callbacks.reset, episode, full, **quiet)
    blocks.unload(callbacks.unload)
    ui["env"].input(callbacks.choose_env, ui["env"], names("task", "scenario", "bench_tasks", "bench_scenarios"),
                    **quiet)
    ui["reset"].click(callbacks.reset, episode, full, **quiet)
    ui["role"].input(callbacks.choose_action, form, [session, *composer], **quiet)
    ui["action_type"].input(callbacks.choose_action, form, [session, *composer], **quiet)
    ui["raw"].input(callbacks.toggle_raw, [*form, *slots], [ui["raw_json"], *slots], **quiet)
    ui["queue_action"].click(callbacks.queue_action, [*form, ui["raw_json"], *slots], queue_outputs, **quiet)
    ui["clear"].click(callbacks.clear_queue, session, queue_outputs, **quiet)
    ui["step"].click(callbacks.step, [session, *names("others", "role", "action_type", "raw")], full, **quiet)
    ui["policy"].input(callbacks.choose_agent, ui["policy"], names("agent_help", "model_box"), **quiet)
    ui["run"].click(callbacks.run_agent, [session, *names("policy", "delay", "role", "action_type", "raw"), *model],
                    full, **quiet)
    ui["stop"].click(callbacks.stop_agent, session, ui["message"], **quiet)
    ui["bench_run"].click(callbacks.run_benchmark, [session, *bench, *model], [session, *names(*callbacks.BENCHMARK)],
                          **quiet)
    ui["bench_stop"].click(callbacks.stop_benchmark, session, ui["bench_status"], **quiet)
    ui["bench_candidate"].input(callbacks.choose_candidate, [session, ui["bench_candidate"]], ui["gate"], **quiet)
    ui["export"].click(callbacks.export, session, [session, *names("files", "message")], api_visibility="private")


def build_blocks() -> gr.Blocks:
    """The whole Space: header, sidebar (episode, agent run, model settings, downloads) and the
    Play/World/Reward/Logs/Benchmark tabs."""
    meta = default_meta(aaos.env_ids()[0])
    ui: Ui = {}
    with gr.Blocks(title="AAOS — Autonomous AI Organization Simulator", delete_cache=(3600, 7200)) as blocks:
        session = gr.State(None, time_to_live=callbacks.SESSION_TTL_S, delete_callback=callbacks.close_session)
        gr.HTML(header(), elem_id="aaos-header")
        with gr.Row(elem_id="aaos-main"):
            with gr.Column(scale=1, min_width=260, elem_id="aaos-sidebar"):
                _sidebar(ui, meta)
            with gr.Column(scale=4, elem_id="aaos-content"):
                ui["status"] = gr.HTML(elem_id="aaos-status-box")
                ui["model_usage"] = gr.HTML(visible=False, elem_id="aaos-usage-box")
                with gr.Tabs(elem_id="aaos-tabs"):
                    with gr.Tab("Play", id="play", elem_id="aaos-tab-play"):
                        _play_tab(ui, aaos.spec(meta.env).roles)
                    with gr.Tab("World", id="world", elem_id="aaos-tab-world"):
                        _world_tab(ui)
                    with gr.Tab("Reward", id="reward", elem_id="aaos-tab-reward"):
                        _reward_tab(ui)
                    with gr.Tab("Logs", id="logs", elem_id="aaos-tab-logs"):
                        _logs_tab(ui)
                    with gr.Tab("Benchmark", id="benchmark", elem_id="aaos-tab-benchmark"):
                        _benchmark_tab(ui, meta.env)
        _wire(blocks, ui, session)
    blocks.queue(default_concurrency_limit=CONCURRENCY)
    return blocks
