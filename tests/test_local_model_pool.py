"""How the shared local model servers are capped and freed: which one makes room, and the limits' settings (the
servers themselves, started and stopped, are in test_local_model_servers.py)."""

from __future__ import annotations

import pytest

from aaos.agents.local_model import (
    DEFAULT_IDLE_S,
    DEFAULT_MAX_SERVERS,
    IDLE_VARIABLE,
    MAX_SERVERS_VARIABLE,
    UNRESPONSIVE,
    Activity,
    pool_limits,
    stoppable,
)


def test_the_server_idle_longest_makes_room() -> None:
    loads = {"untrained": Activity(0, 30.0), "org": Activity(0, 95.5), "inbox": Activity(0, 2.0)}
    assert stoppable(loads) == ["org", "untrained", "inbox"]


def test_the_untrained_models_server_makes_room_too() -> None:
    """Its key is None (no adapter), which must not read as "nothing to stop"."""
    assert stoppable({None: Activity(0, 3.0)}) == [None]


def test_a_server_serving_a_request_is_never_stopped_however_long_the_others_idled() -> None:
    loads = {"untrained": Activity(1, 0.0), "org": Activity(0, 4.0), "inbox": Activity(3, 0.0)}
    assert stoppable(loads) == ["org"]
    assert stoppable({"untrained": Activity(1, 0.0), "inbox": Activity(2, 0.0)}) == []


def test_a_server_that_does_not_say_its_load_goes_first() -> None:
    assert stoppable({"untrained": Activity(0, 10_000.0), "org": UNRESPONSIVE})[0] == "org"


def test_the_limits_default_and_read_their_variables() -> None:
    assert pool_limits({}) == (DEFAULT_MAX_SERVERS, DEFAULT_IDLE_S)
    assert pool_limits({MAX_SERVERS_VARIABLE: " 3 ", IDLE_VARIABLE: "12.5"}) == (3, 12.5)


@pytest.mark.parametrize(("variable", "value"), [
    (MAX_SERVERS_VARIABLE, "0"), (MAX_SERVERS_VARIABLE, "two"), (MAX_SERVERS_VARIABLE, "-1"),
    (MAX_SERVERS_VARIABLE, "1.5"), (IDLE_VARIABLE, "0"), (IDLE_VARIABLE, "-3"), (IDLE_VARIABLE, "soon"),
    (IDLE_VARIABLE, "inf"), (IDLE_VARIABLE, "nan"),
])
def test_a_bad_limit_says_which_variable_to_set(variable: str, value: str) -> None:
    with pytest.raises(RuntimeError, match=f"{variable}={value!r}: set it to"):
        pool_limits({variable: value})
