"""End to end with the real local model: SmolLM2-135M-Instruct served by llama-cpp-python on loopback.

The model is weak; these tests assert that every action it leads to is valid (its own, repaired, or the
champion's fallback), that episodes finish and that the log lines are well formed, not that it plays well.
Each plays a whole org_simulation episode (20 steps for this model), a few minutes on 2 cores.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import numpy as np
import pytest
from test_inference import END, START, STEP, run_inference
from ui_fixtures import html_table, reset, run_benchmark, steps

import aaos
from aaos.agents import local_model
from aaos.agents.llm import LLMPolicy
from aaos.agents.local_model import MODEL_NAME, missing, shared_server
from aaos.policies import LOCAL_UNTRAINED, display_name
from aaos.ui import agents

MAX_STEPS = next(t["max_steps"] for t in aaos.list_tasks() if t["id"] == "org_simulation")

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(missing() is not None, reason=f"local model not installed: {missing()}"),
]


def assert_accounted(stats: dict[str, object], steps: int, calls_per_step: int) -> None:
    """Every role's action of every step went to a tier, and the model was really called."""
    decisions = stats["decisions"]
    assert isinstance(decisions, dict) and sum(decisions.values()) == 6 * steps
    assert decisions["primary"] > 0  # the model's own answers, not only fallbacks
    assert stats["calls"] >= calls_per_step * steps  # type: ignore[operator]
    assert stats["prompt_tokens"] > 0 and stats["completion_tokens"] > 0  # type: ignore[operator]


def test_the_space_benchmark_ranks_the_champion_random_and_the_local_model() -> None:
    """What a user gets from the Benchmark tab with the local model installed: the untrained model's per-role
    episode is played (six concurrent calls a step, each role seeing only its own view) and ranked beside the
    baselines."""
    session = reset()["session"]
    last = run_benchmark(session, policies=("heuristic", "random", "local-untrained"),
                         scenarios=("product_launch_failure",), splits=("train",), candidate="local-untrained",
                         mode="per_role")[-1]
    assert "Done: 3 episodes" in last["bench_status"], last["bench_status"]
    board = html_table(last["leaderboard"])
    assert {row["Policy"] for row in board} == {display_name(p) for p in ("heuristic", "random", LOCAL_UNTRAINED)}
    assert board[0]["Policy"] == display_name("heuristic")
    results = next(Path(p) for p in last["bench_files"]["value"] if Path(p).name == "results.jsonl")
    local = [r for r in map(json.loads, results.read_text(encoding="utf-8").splitlines())
             if r["policy"] == LOCAL_UNTRAINED]
    assert len(local) == 1 and local[0]["error"] is None
    record = local[0]
    assert record["invalid_actions"] == 0 and 0.0 <= record["score"] <= 1.0
    assert 1 <= record["steps"] <= MAX_STEPS
    assert_accounted(record["llm"], record["steps"], calls_per_step=6)


def test_the_local_model_plays_a_full_org_simulation_episode_in_joint_mode() -> None:
    env = aaos.make("org_simulation", scenario="vendor_outage_cascade", seed=10000)
    policy = LLMPolicy(env.spec, shared_server().config("joint"))
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
    assert steps <= MAX_STEPS
    assert_accounted(policy.stats.to_dict(), steps, calls_per_step=1)
    assert 0.0 <= result.info["score"] <= 1.0


def test_an_environment_with_a_shipped_adapter_gets_the_fine_tuned_local_agent_in_compact_mode(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Space's and the benchmark's `local` agent where `aaos train` shipped an adapter (here a small random
    one, made without torch): its own llama.cpp server applies the adapter, and the agent reads the compact
    prompt; the untrained model keeps its own server."""
    save_file = pytest.importorskip("safetensors.numpy", reason="safetensors comes with the [train] extra").save_file
    pytest.importorskip("gguf", reason="gguf is in the optional [train] extra")
    from aaos.training.gguf_lora import write_gguf_lora

    peft = tmp_path / "peft"
    peft.mkdir()
    rng = np.random.default_rng(0)
    tensors = {f"base_model.model.model.layers.{i}.self_attn.q_proj.lora_{part}.weight": rng.normal(
        0, 0.02, shape).astype(np.float32) for i in range(30) for part, shape in (("A", (2, 576)), ("B", (576, 2)))}
    save_file(tensors, peft / "adapter_model.safetensors")
    (peft / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 2, "lora_alpha": 4,
                                                          "target_modules": ["q_proj"]}), encoding="utf-8")
    adapter = write_gguf_lora(peft, tmp_path / "adapter.gguf")
    monkeypatch.setattr(local_model, "trained_adapter", lambda env: adapter if env == "org" else None)
    config = local_model.local_config("org", mode="per_role")
    assert config.mode == "compact" and local_model.shared_server(adapter).base_url == config.base_url
    assert local_model.shared_server().base_url != config.base_url
    assert local_model.local_config("inbox", mode="joint").mode == "joint"  # no adapter there: the wheel's model
    env = aaos.make("org_simulation", scenario="compliance_audit_crunch", seed=10000)
    policy = LLMPolicy(env.spec, config)
    observation = env.reset()
    try:
        for _ in range(2):
            observation = env.step(policy.act(observation)).observation
    finally:
        policy.close()
    stats = policy.stats.to_dict()
    assert 2 <= stats["calls"] <= 4 and stats["decisions"]["primary"] > 0, stats
    local_model.shared_server(adapter).stop()


def test_inference_lines_with_the_local_model() -> None:
    done = run_inference(MODEL_NAME=MODEL_NAME, API_BASE_URL=shared_server().base_url, RESPONSE_FORMAT="json_object",
                         MAX_STEPS="1")
    lines = done.stdout.splitlines()
    assert len(lines) == 9  # three tasks: START, one STEP, END
    for start, step, end in zip(lines[0::3], lines[1::3], lines[2::3], strict=True):
        assert START.match(start) and start.endswith(f"model={MODEL_NAME}")
        assert STEP.match(step) and " done=true " in step
        assert END.match(end) and " steps=1 " in end


def test_the_spaces_local_agent_plays_when_port_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Space run with PORT set (container hosts, launch scripts): llama_cpp.server reads PORT (and its other
    settings) from the environment over its --port flag, so unless it gets an environment of its own it tries the
    Space's port, fails to bind and exits. Here PORT is a port this test holds, as the Space would; the Space's
    local agent starts its own server (none shared yet) and decides a step of a mixed team."""
    servers: dict[Path | None, local_model.LocalModelServer] = {}
    monkeypatch.setattr(local_model, "_shared", servers)
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        monkeypatch.setenv("PORT", str(held.getsockname()[1]))
        monkeypatch.setenv("HOST", "0.0.0.0")
        assert {"PORT", "HOST"}.isdisjoint(local_model.server_environment())
        try:
            session = reset(task="org_simulation")["session"]
            last = steps(session, others="agent", agent="local-untrained")[-1]
            assert "could not start" not in last["message"] and session.step_count == 1, last["message"]
            # the agent as the Space names it (the untrained model, not the fine-tuned one), for every role
            assert set(session.records[-1]["decided_by"].values()) == {agents.label("local-untrained")}
        finally:
            for server in servers.values():
                server.stop()
