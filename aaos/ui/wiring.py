"""How the Space's modules connect: named components, handlers whose outputs are named, and each tab's session.

Every tab module (play_tab, dashboard_tab, benchmark_tab, …) adds its components to one `Ui` under a name and wires its
events with `Ui.event`. A handler returns (or yields) a dict from output names to values; `Ui.event` turns it
into the {component: value} dict Gradio takes, so outputs are matched by name, never by position. An output a
handler leaves out keeps its value.
"""

from __future__ import annotations

import functools
import inspect
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import gradio as gr
from gradio.blocks import Block

import aaos
from aaos.core.trajectory import EpisodeMeta
from aaos.ui.session import Session, default_meta

Outputs = dict[str, Any]
"""A handler's outputs by name."""
SESSION_TTL_S = 2 * 3600
"""A tab's simulation is freed after this long without an event (and as soon as the tab closes)."""
QUIET: dict[str, Any] = {"api_visibility": "private", "show_progress": "hidden"}
"""The Space's events are for its page only: no public API, no progress overlay."""

_OPEN: weakref.WeakValueDictionary[str, Session] = weakref.WeakValueDictionary()
"""Open sessions by browser session hash, so that closing a tab frees its simulation at once."""


class Ui:
    """The Space's components by name ("session" is the tab's gr.State)."""

    def __init__(self, session: gr.State) -> None:
        self._blocks: dict[str, Block] = {"session": session}

    def __setitem__(self, name: str, block: Block) -> None:
        if name in self._blocks:
            raise KeyError(f"two components named {name!r}")
        self._blocks[name] = block

    def __getitem__(self, name: str) -> Block:
        return self._blocks[name]

    def __contains__(self, name: str) -> bool:
        return name in self._blocks

    def event(self, listener: Callable[..., Any], handler: Callable[..., Any], inputs: Sequence[str],
              outputs: Sequence[str], **options: Any) -> Any:
        """Wire `listener` (e.g. ui["step"].click) to `handler`, its inputs and outputs given by name; returns the
        event."""
        blocks = {name: self[name] for name in outputs}
        return listener(by_component(handler, blocks), [self[name] for name in inputs], list(blocks.values()),
                        **{**QUIET, **options})


def by_component(handler: Callable[..., Any], blocks: dict[str, Block]) -> Callable[..., Any]:
    """`handler` returning {component: value} where it returns {name: value} (a generator stays a generator)."""
    def convert(values: Outputs) -> dict[Any, Any]:
        unknown = values.keys() - blocks.keys()
        if unknown:
            raise KeyError(f"{handler.__name__} returned outputs it is not wired to: {sorted(unknown)}")
        return {blocks[name]: value for name, value in values.items()} or gr.skip()

    if inspect.isgeneratorfunction(handler):
        @functools.wraps(handler)
        def stream(*args: Any, **kwargs: Any) -> Iterator[dict[Any, Any]]:
            updates = handler(*args, **kwargs)
            try:
                for values in updates:
                    yield convert(values)
            finally:
                updates.close()  # the handler's own clean-up runs when Gradio drops the stream

        return stream

    @functools.wraps(handler)
    def call(*args: Any, **kwargs: Any) -> dict[Any, Any]:
        return convert(handler(*args, **kwargs))

    return call


def open_session(meta: EpisodeMeta, request: gr.Request | None) -> Session:
    session = Session(meta)
    if request is not None and request.session_hash:
        _OPEN[request.session_hash] = session
    return session


def live(session: Session | None) -> Session | None:
    return session if session is not None and not session.closed else None


def current(session: Session | None, request: gr.Request | None) -> Session:
    """The tab's live session, or a fresh default episode for a tab whose session expired (or never loaded)."""
    return live(session) or open_session(default_meta(aaos.env_ids()[0]), request)


def close_session(session: Session | None) -> None:
    """gr.State's delete_callback: the session expired or its tab is gone."""
    if session is not None:
        session.close()


def unload(request: gr.Request) -> None:
    """The tab closed: free its simulation now."""
    session = _OPEN.pop(request.session_hash, None) if request.session_hash else None
    close_session(session)
