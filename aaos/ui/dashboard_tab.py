"""The World, Reward and Logs tabs: what the episode looks like as a whole. They have no events of their own;
every event that changes the episode re-renders them through `render`."""

from __future__ import annotations

import gradio as gr

import aaos
from aaos.ui import charts, formatting
from aaos.ui.session import Session
from aaos.ui.wiring import Outputs, Ui

OUTPUTS: tuple[str, ...] = ("world", "timeline", "reward_help", "reward_plot", "delivery_plot", "oversight", "actions")
"""The components `render` fills."""


def _title(text: str) -> None:
    gr.Markdown(f"### {text}", elem_classes=["aaos-panel-title"])


def build(ui: Ui) -> None:
    """The three tabs, inside the page's gr.Tabs."""
    with gr.Tab("World", id="world", elem_id="aaos-tab-world"), gr.Row():
        with gr.Column(scale=3):
            ui["world"] = gr.HTML(elem_id="aaos-world-box")
        with gr.Column(scale=2):
            _title("Event timeline")
            ui["timeline"] = gr.HTML(elem_id="aaos-timeline-box")
    with gr.Tab("Reward", id="reward", elem_id="aaos-tab-reward"):
        ui["reward_help"] = gr.HTML(elem_id="aaos-reward-help")
        ui["reward_plot"] = gr.LinePlot(x="step", y="value", color="series", y_lim=[0, 1], height=300,
                                        title="Reward components and composite score", x_title="Step",
                                        y_title="Value", color_title="Component", elem_id="aaos-reward-plot")
        ui["delivery_plot"] = gr.LinePlot(x="step", y="value", color="series", y_lim=[0, 1], height=240,
                                          title="Reward delivered each step: immediate and delayed shares",
                                          x_title="Step", y_title="Reward", color_title="Series",
                                          elem_id="aaos-delivery-plot")
    with gr.Tab("Logs", id="logs", elem_id="aaos-tab-logs"):
        ui["oversight"] = gr.Dataframe(headers=list(formatting.OVERSIGHT_COLUMNS), label="Oversight log",
                                       interactive=False, wrap=True, max_height=260, elem_id="aaos-oversight",
                                       column_widths=list(formatting.OVERSIGHT_WIDTHS))
        ui["actions"] = gr.Dataframe(headers=list(formatting.ACTION_COLUMNS), interactive=False, wrap=True,
                                     label="Action log (newest first, no-ops left out)", max_height=420,
                                     show_search="search", elem_id="aaos-actions",
                                     column_widths=list(formatting.ACTION_WIDTHS))


def render(session: Session) -> Outputs:
    """The three tabs for the session's episode; the world panel is the environment kit's, its scores the final
    grade once the episode is over."""
    observation = session.observation
    records = session.records
    if session.done:  # the grade of every component, those the agents never saw too, as the report shows it
        observation = {**observation, "partial_scores": records[-1]["reward_breakdown"]["components"]}
    horizon = [0, observation["max_steps"]]  # charts span the whole episode
    delivered = charts.delivery_frame(records)
    return {
        "world": aaos.kit_of(session.meta.env).rendering.world(observation),
        "timeline": formatting.timeline(observation, records),
        "reward_help": formatting.reward_help(session.env.spec),
        "reward_plot": gr.update(value=charts.component_frame(session.initial_scores, records), x_lim=horizon),
        "delivery_plot": gr.update(value=delivered, x_lim=horizon, y_lim=charts.fitted_range(delivered)),
        "oversight": formatting.oversight_frame(records),
        "actions": formatting.action_frame(records),
    }
