"""A list of problems cut short says how many were left out, in process (a rejected payload's message) and on
every server surface (aaos.server.wire.clipped)."""

from __future__ import annotations

import aaos
from aaos.core.actions import MAX_PAYLOAD_PROBLEMS, at_most
from aaos.server.models import MAX_MESSAGES
from aaos.server.wire import MAX_ECHO_CHARS, clipped


def test_at_most_keeps_a_short_list_and_counts_what_it_leaves_out() -> None:
    assert at_most(["a", "b"], 2) == ["a", "b"]
    assert at_most(["a", "b", "c", "d"], 2) == ["a", "b", "and 2 more"]
    assert at_most([], 0) == [] and at_most(["a"], 0) == ["and 1 more"]


def test_clipped_lists_at_most_max_messages_then_the_count_of_the_rest() -> None:
    messages = [f"problem {n}: " + "x" * (MAX_ECHO_CHARS * 2) for n in range(MAX_MESSAGES + 5)]
    shown = clipped(messages)
    assert len(shown) == MAX_MESSAGES + 1 and shown[-1] == "and 5 more"
    assert all(len(message) < MAX_ECHO_CHARS + 40 for message in shown)
    assert clipped(messages[:MAX_MESSAGES]) == shown[:-1]


def test_a_rejected_payload_with_many_problems_says_how_many_more_there_are() -> None:
    env = aaos.make("full_episode", scenario="product_launch_failure", seed=0)
    env.reset()
    wrong = {"amount": "lots", "resource_type": 7, "reason": [], "when": {}, "who": None}
    result = env.step({"operations": {"action_type": "approve_resource", "payload": wrong}})
    message = result.info["action_results"]["operations"]["message"]
    assert message.count("payload.") == MAX_PAYLOAD_PROBLEMS and message.endswith("; and 2 more"), message
