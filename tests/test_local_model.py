"""End to end with the real local model: SmolLM2-135M-Instruct served by llama-cpp-python on loopback.

The model is weak; these tests assert that every action it leads to is valid (its own, repaired, or the
champion's fallback), that episodes finish and that the log lines are well formed, not that it plays well.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from test_inference import END, START, STEP, run_inference

import aaos
from aaos.agents.llm import LLMPolicy
from aaos.agents.local_model import MODEL_NAME, LocalModelServer, missing

pytestmark = [
    pytest.mark.skipif(os.environ.get("AAOS_LOCAL_MODEL_TESTS") != "1",
                       reason="slow (minutes per episode on 2 cores): set AAOS_LOCAL_MODEL_TESTS=1 to run"),
    pytest.mark.skipif(missing() is not None, reason=f"local model not installed: {missing()}"),
]


@pytest.fixture(scope="module")
def server() -> Iterator[LocalModelServer]:
    running = LocalModelServer().start()
    yield running
    running.stop()


@pytest.mark.parametrize("mode", ["per_role", "joint"])
def test_local_model_plays_a_full_org_simulation_episode(server: LocalModelServer, mode: str) -> None:
    env = aaos.make("org_simulation", scenario="product_launch_failure", seed=0)
    policy = LLMPolicy(env.spec, server.config(mode))
    observation = env.reset()
    steps = 0
    try:
        while True:
            result = env.step(policy.act(observation))
            observation = result.observation
            steps += 1
            assert all(r["status"] != "rejected" for r in result.info["action_results"].values()), result.info
            if result.done:
                break
    finally:
        policy.close()
    stats = policy.stats.to_dict()
    assert steps <= 20 and result.done
    assert sum(stats["decisions"].values()) == 6 * steps  # every role's action is accounted to a tier
    assert stats["calls"] >= (steps if mode == "joint" else 6 * steps)
    assert stats["prompt_tokens"] > 0 and stats["completion_tokens"] > 0
    assert 0.0 <= result.info["score"] <= 1.0


def test_inference_lines_with_the_local_model(server: LocalModelServer) -> None:
    done = run_inference(MODEL_NAME=MODEL_NAME, API_BASE_URL=server.base_url, RESPONSE_FORMAT="json_object",
                         MAX_STEPS="1")
    lines = done.stdout.splitlines()
    assert len(lines) == 9  # three tasks: START, one STEP, END
    for start, step, end in zip(lines[0::3], lines[1::3], lines[2::3], strict=True):
        assert START.match(start) and start.endswith(f"model={MODEL_NAME}")
        assert STEP.match(step) and " done=true " in step
        assert END.match(end) and " steps=1 " in end
