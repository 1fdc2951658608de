"""A dropdown whose choices the Space's events change: the role's actions, an action's payload values, an
environment's tasks and scenarios, the Arena's and Replay's episodes."""

from __future__ import annotations

from typing import Any

import gradio as gr


def changing_dropdown(*args: Any, **kwargs: Any) -> gr.Dropdown:
    """A gr.Dropdown (same arguments) that hands a value outside its current choices to the event's handler rather
    than Gradio refusing it with an error popup.

    The browser sends the value it shows. Between an event that changes the choices (another role: its actions) and
    the page drawing them, that is a value of the choices shown a moment earlier, while the server already holds the
    new ones. The handlers judge every value they get (a role the environment lacks, an action the role may not take
    now, a payload value that is no current choice) and answer with the Space's own message or the form of what is
    shown."""
    return gr.Dropdown(*args, allow_custom_value=True, **kwargs)
