"""`aaos serve` freezes its start-up heap out of the garbage collector's full collections before it serves
(aaos.server.app.run_server, which the Space's `python app.py` uses too), and garbage made while serving is still
collected."""

from __future__ import annotations

import gc
import weakref

import pytest
import uvicorn

from aaos.server.app import serve


class Node:
    """Something a reference cycle can be made of."""

    other: Node | None = None


def test_serve_freezes_the_start_up_heap_and_still_collects_later_garbage(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, object] = {}

    def run(server: uvicorn.Server) -> None:
        app = server.config.app
        seen["frozen"] = gc.get_freeze_count()
        seen["app walked"] = any(thing is app for thing in gc.get_objects())
        cycle = Node()
        cycle.other = cycle
        gone = weakref.ref(cycle)
        del cycle
        gc.collect()
        seen["cycle collected"] = gone() is None

    monkeypatch.setattr(uvicorn.Server, "run", run)
    try:
        serve(port=0)
    finally:
        gc.unfreeze()
    assert isinstance(seen["frozen"], int) and seen["frozen"] > 10_000
    assert seen["app walked"] is False
    assert seen["cycle collected"] is True
