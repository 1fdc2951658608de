"""The Gradio Space. Interim: a header page, until the interactive UI lands."""

from __future__ import annotations

import gradio as gr
from fastapi import FastAPI


def build_blocks() -> gr.Blocks:
    with gr.Blocks(title="AAOS") as blocks:
        gr.Markdown("# AAOS — Autonomous AI Organization Simulator\nThe interactive Space is being built.")
    return blocks


def mount_ui(app: FastAPI) -> FastAPI:
    return gr.mount_gradio_app(app, build_blocks(), path="/")
