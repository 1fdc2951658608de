"""The Gradio Space: layout (layout.py), event handlers (callbacks.py), one simulation per browser tab
(session.py), the action form (forms.py), the agents a run can use with their model settings (agents.py), the
one-click benchmark (benchmark.py), HTML and tables (formatting.py) and chart data (charts.py)."""

from __future__ import annotations

import gradio as gr
from fastapi import FastAPI

from aaos.ui.layout import CSS, LOGO, build_blocks, theme


def mount_ui(app: FastAPI) -> FastAPI:
    """Mount the Space at `/` of `app` (mount it after the API routes, so that it never shadows them)."""
    return gr.mount_gradio_app(app, build_blocks(), path="/", theme=theme(), css_paths=[CSS], favicon_path=LOGO,
                               footer_links=["gradio", "settings"], run_history=False)


__all__ = ["build_blocks", "mount_ui"]
