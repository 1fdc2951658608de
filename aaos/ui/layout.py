"""The Space's page: the theme, the header, and the sidebar and tabs each built and wired by their own module
(play_tab: the episode and the Play tab; dashboard_tab: World, Reward and Logs; benchmark_tab: Benchmark; training_tab:
Training; replay_tab: Replay; arena_tab: Arena).

Components carry stable elem_ids (aaos-*) for the CSS in assets/ and for the browser tests.
"""

from __future__ import annotations

import gradio as gr

import aaos
from aaos.data import data_dir
from aaos.ui import arena_tab, benchmark_tab, dashboard_tab, play_tab, prose, replay_tab, training_tab
from aaos.ui.session import default_meta
from aaos.ui.wiring import QUIET, SESSION_TTL_S, Ui, close_session, unload

ASSETS = data_dir("assets")
CSS = ASSETS / "aaos.css"
LOGO = ASSETS / "logo.svg"
CONCURRENCY = 16
"""Events of different tabs run in parallel up to this many per event type; one tab's are serialised by its lock."""
SYSTEM_FONTS = ("ui-sans-serif", "system-ui", "-apple-system", "Segoe UI", "Helvetica", "Arial", "sans-serif")
MONO_FONTS = ("ui-monospace", "SFMono-Regular", "Menlo", "Consolas", "DejaVu Sans Mono", "monospace")


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


def header(env_id: str) -> str:
    """The header for the selected environment."""
    return prose.header(env_id, LOGO)


def build_blocks() -> gr.Blocks:
    """The whole Space: header, sidebar (episode, agent run, model settings, downloads) and the
    Play/World/Reward/Logs/Benchmark/Training/Replay/Arena tabs."""
    meta = default_meta(aaos.env_ids()[0])
    # fill_width: wide screens use their width (up to the CSS's cap); the cards get more room there.
    with gr.Blocks(title=prose.TITLE, delete_cache=(3600, 7200), fill_width=True) as blocks:
        ui = Ui(gr.State(None, time_to_live=SESSION_TTL_S, delete_callback=close_session))
        ui["header"] = gr.HTML(header(meta.env), elem_id="aaos-header")
        with gr.Row(elem_id="aaos-main"):
            with gr.Column(scale=1, min_width=260, elem_id="aaos-sidebar"):
                play_tab.build_sidebar(ui, meta)
            with gr.Column(scale=4, elem_id="aaos-content"):
                play_tab.build_status(ui)
                with gr.Tabs(elem_id="aaos-tabs", overflow_behavior="wrap"):  # no tab hides behind a menu
                    play_tab.build_tab(ui, aaos.spec(meta.env).roles)
                    dashboard_tab.build(ui)
                    benchmark_tab.build(ui, meta.env)
                    training_tab.build(ui, meta.env)
                    replay_tab.build(ui)
                    arena_tab.build(ui, meta.env)
        play_tab.wire(blocks, ui)
        benchmark_tab.wire(ui)
        training_tab.wire(ui)
        replay_tab.wire(blocks, ui)
        arena_tab.wire(blocks, ui)
        ui["env"].input(header, ui["env"], ui["header"], **QUIET)
        blocks.unload(unload)
    blocks.queue(default_concurrency_limit=CONCURRENCY)
    return blocks
