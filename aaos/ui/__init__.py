"""The Gradio Space: the page (layout.py) with one module per part, each building its components, wiring its
events and holding its handlers — play_tab.py (the sidebar, the status bar and the Play tab), dashboard_tab.py (World,
Reward, Logs), benchmark_tab.py (Benchmark) and training_tab.py (Training: the committed evidence of aaos train)
— connected by wiring.py (named components, outputs by name, the tab's session). Plain Python beneath: one
simulation per browser tab (session.py), the action form (forms.py), the agents and model settings (agents.py),
the one-click benchmark (benchmark.py), generic HTML and tables (formatting.py; each environment's own HTML is its
kit's), chart data (charts.py) and the words (prose.py)."""

from __future__ import annotations

import gradio as gr
from fastapi import FastAPI

from aaos.ui.layout import CSS, LOGO, build_blocks, theme


def mount_ui(app: FastAPI) -> FastAPI:
    """Mount the Space at `/` of `app` (mount it after the API routes, so that it never shadows them)."""
    return gr.mount_gradio_app(app, build_blocks(), path="/", theme=theme(), css_paths=[CSS], favicon_path=LOGO,
                               footer_links=["gradio", "settings"], run_history=False)


__all__ = ["build_blocks", "mount_ui"]
