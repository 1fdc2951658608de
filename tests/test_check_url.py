"""`aaos check --url` (aaos.check.remote) against real servers on loopback: a deliberately broken toy server
(tests/broken_openenv_server.py, a fault-injection fixture: clean it passes every check, and each seeded defect
fails exactly the checks it should, saying what), OpenEnv's own echo environment (openenv-core's `openenv init`
template, served by uvicorn), and our server (every environment passes); the schema sampler against the
jsonschema package; the command line."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from broken_openenv_server import DEFECTS, EXPECTED_FAILURES, WalkAction, every_variant
from helpers import REPO_ROOT, free_port
from openenv.cli.commands import init as openenv_init

import aaos
from aaos.check.remote import check_url
from aaos.check.remote_report import REMOTE_CHECKS, RemoteReport
from aaos.check.remote_schema import Schema, Unsampleable, Vocabulary
from aaos.cli import main
from aaos.server.app import create_app
from aaos.server.background import BackgroundServer
from aaos.server.models import env_schemas

QUICK: dict[str, Any] = {"episodes": 2, "fuzz": 40, "max_steps": 12, "timeout": 5.0}
"""Settings that keep a check of the toy quick (its episodes last 8 steps)."""
ECHO_START_SECONDS = 90
DEFECT_SAYS: dict[str, dict[str, str]] = {
    "no_schema": {"published": "GET /schema has no action schema"},
    "unseeded": {"determinism": "gave different episodes: answer 0 (reset): observation.position"},
    "crash_on_malformed": {"malformed_actions": "closed", "malformed_http": "HTTP 500"},
    "accepts_invalid": {"malformed_actions": "accepted observation", "malformed_http": "accepted with HTTP 200"},
    "changed_by_refusal": {"malformed_actions": "refused, yet the state changed: steps: 0 != 1"},
    "shared_state": {"session_isolation": "changed when another session played beside it"},
    "reward_as_string": {"contract": 'reward is string ("0.0")'},
    "done_as_number": {"contract": "done is integer (0), not a boolean"},
    "missing_field": {"contract": "the observation lacks 'target', which its schema requires"},
    "crash_after_done": {"step_after_done": "a step after done lost the session"},
    "continues_after_done": {"step_after_done": "the episode went on (done false) without a reset"},
    "reward_ignores_actions": {"ladder": "the reward does not respond to actions"},
    "score_mismatch": {"return_vs_score": "return 0.0 != score 1.0"},
    "dies_on_binary": {"malformed_frames": "a binary frame"},
}
"""What each defect's failing checks must say (in the summary or the evidence)."""


@pytest.fixture(scope="module")
def toy() -> Iterator[str]:
    """The broken toy on loopback: the clean walk at /clean, each defect alone at /<defect>."""
    with BackgroundServer(every_variant()) as server:
        yield server.url


@pytest.fixture(scope="module")
def ours() -> Iterator[str]:
    with BackgroundServer(create_app()) as server:
        yield server.url


@pytest.fixture(scope="module")
def echo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """OpenEnv's echo environment as `openenv init` writes it (openenv-core's own template), served by uvicorn in a
    subprocess on a free loopback port."""
    folder = tmp_path_factory.mktemp("openenv")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(openenv_init, "_generate_uv_lock", lambda env_dir: False)  # uv and the network; not served
        openenv_init.init("echo", output_dir=str(folder))
    port = free_port()
    # as `aaos serve` does, openenv's Gradio web interface (never served here) is left unloaded: seconds of start
    code = ("import sys; sys.modules['openenv.core.env_server.web_interface'] = None; import uvicorn; "
            f"uvicorn.run('server.app:app', host='127.0.0.1', port={port}, log_level='critical')")
    process = subprocess.Popen([sys.executable, "-c", code], cwd=folder / "echo", stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + ECHO_START_SECONDS
        while True:
            assert process.poll() is None, "the echo server exited"
            assert time.monotonic() < deadline, "the echo server did not answer /health in time"
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def statuses(report: RemoteReport) -> dict[str, str]:
    return {result.name: result.status for result in report.results}


def said(report: RemoteReport, check: str) -> str:
    result = report.result(check)
    return " ".join([result.summary, *result.evidence])


# --- the broken toy ----------------------------------------------------------------------------------------------


def test_the_clean_toy_passes_every_check(toy: str) -> None:
    report = check_url(f"{toy}/clean", **QUICK)
    assert statuses(report) == dict.fromkeys(REMOTE_CHECKS, "pass"), report.markdown()
    assert report.server["name"] == "broken-walk"
    assert "random-legal returns" in report.result("ladder").summary
    assert "equals its reported score" in report.result("return_vs_score").summary


@pytest.mark.parametrize("defect", list(DEFECTS))
def test_each_seeded_defect_fails_exactly_its_checks_with_a_message_that_says_what(toy: str, defect: str) -> None:
    report = check_url(f"{toy}/{defect}", **QUICK)
    assert set(report.failed) == EXPECTED_FAILURES[defect], report.markdown()
    assert not report.passed
    for check, words in DEFECT_SAYS[defect].items():
        assert words in said(report, check), report.markdown()
        assert report.result(check).fix, "a failure says how to fix it"
    markdown = report.markdown()
    for check in EXPECTED_FAILURES[defect]:
        assert f"## {check}: FAIL" in markdown
    assert "How to fix:" in markdown


def test_the_report_s_json_names_each_check_its_status_evidence_and_fix(toy: str) -> None:
    report = check_url(f"{toy}/score_mismatch", **QUICK)
    data = json.loads(report.json_text())
    assert data["passed"] is False and data["failed"] == ["return_vs_score"]
    assert [check["name"] for check in data["checks"]] == list(REMOTE_CHECKS)
    failed = data["checks"][list(REMOTE_CHECKS).index("return_vs_score")]
    assert failed["status"] == "fail" and failed["fix"] and failed["evidence"]
    assert failed["checks_that"] == REMOTE_CHECKS["return_vs_score"]
    assert data["settings"]["seed"] == 0


def test_a_server_that_is_not_there_fails_published_and_nothing_else_runs() -> None:
    report = check_url(f"http://127.0.0.1:{free_port()}", **QUICK)
    assert report.failed == ["published"]
    assert "refused a connection" in report.result("published").summary
    assert set(statuses(report).values()) == {"fail", "not applicable"}


def test_check_url_refuses_settings_it_cannot_use() -> None:
    with pytest.raises(ValueError, match="--seed"):
        check_url("http://127.0.0.1:1", reset_params={"seed": 3})
    with pytest.raises(ValueError, match="episodes"):
        check_url("http://127.0.0.1:1", episodes=0)
    with pytest.raises(ValueError, match="http:// or https://"):
        check_url("127.0.0.1:8000")


# --- real servers ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("env", [pytest.param("org", marks=pytest.mark.slow),
                                 pytest.param("inbox", marks=pytest.mark.slow), "chief_of_staff"])
def test_our_server_passes_every_check_for_every_environment(ours: str, env: str) -> None:
    report = check_url(ours, reset_params={"env": env}, episodes=2, fuzz=80)
    assert statuses(report) == dict.fromkeys(REMOTE_CHECKS, "pass"), report.markdown()
    assert "stateful sessions" in said(report, "contract")


def test_openenv_s_echo_environment_is_reported_honestly(echo: str) -> None:
    """The echo env never ends and openenv's template serves one session at a time; openenv-core 0.3.0's WS route
    ends a session on a frame it cannot read as a JSON object (a binary frame, deep nesting, an array)."""
    report = check_url(echo, episodes=2, fuzz=40, max_steps=10)
    assert statuses(report) == {
        "published": "pass", "contract": "pass", "determinism": "pass", "session_isolation": "not applicable",
        "malformed_actions": "pass", "malformed_frames": "fail", "malformed_http": "pass",
        "step_after_done": "not applicable", "ladder": "pass", "return_vs_score": "not applicable"}, report.markdown()
    assert report.server["name"] == "EchoEnvironment"
    assert "CAPACITY_REACHED" in said(report, "session_isolation")
    assert "no episode ended within 10 noop steps" in said(report, "step_after_done")
    frames = said(report, "malformed_frames")
    assert "a binary frame" in frames and "SESSION_ERROR" in frames
    assert "the seed changes nothing observed" in said(report, "determinism")


# --- the schema sampler ------------------------------------------------------------------------------------------

SYNTHETIC: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["kind", "count"],
    "properties": {
        "kind": {"enum": ["a", "b"]}, "count": {"type": "integer", "exclusiveMinimum": 0, "maximum": 9},
        "ratio": {"type": "number", "minimum": 0.5, "exclusiveMaximum": 2.5, "multipleOf": 0.5},
        "when": {"type": "string", "format": "date-time"}, "tags": {"type": "array", "items": {"type": "string"},
                                                                    "maxItems": 3},
        "pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "boolean"}], "items": False,
                 "minItems": 2, "maxItems": 2},
        "label": {"type": ["string", "null"], "maxLength": 5},
        "both": {"allOf": [{"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
                           {"properties": {"y": {"const": 1}}}]},
    },
}


def _schemas() -> list[Any]:
    return [pytest.param(env_schemas(env)["action"], id=env) for env in aaos.env_ids()] + [
        pytest.param(WalkAction.model_json_schema(), id="toy"), pytest.param(SYNTHETIC, id="synthetic")]


@pytest.mark.parametrize("published", _schemas())
def test_samples_are_valid_and_hostile_labels_agree_with_jsonschema(published: dict[str, Any]) -> None:
    schema, oracle = Schema(published), jsonschema.Draft202012Validator(published)
    values = [schema.least(), *(schema.sample(random.Random(seed)) for seed in range(12))]
    for value in values:
        assert oracle.is_valid(value), (value, list(oracle.iter_errors(value))[:1])
        assert schema.errors(value) == []
    hostile = [h for value in values[:4] for h in schema.hostile(value)]
    assert any(h.invalid for h in hostile)
    for h in hostile:
        assert oracle.is_valid(h.value) is not h.invalid, h.label
        assert bool(schema.errors(h.value)) is h.invalid


def test_a_random_id_names_one_the_observation_showed() -> None:
    env = aaos.make(env="inbox")
    observation = env.reset()
    shown = {row["id"] for row in observation["inbox"]}
    schema = Schema(env_schemas("inbox")["action"])
    rng, seen = random.Random(0), Vocabulary(observation)
    named = [action["triage_agent"]["payload"]["email_id"] for action in (schema.sample(rng, seen) for _ in range(200))
             if action.get("triage_agent") and "email_id" in action["triage_agent"].get("payload", {})]
    assert named and sum(email in shown for email in named) / len(named) > 0.5


def test_a_pattern_no_shown_string_matches_cannot_be_sampled() -> None:
    schema = Schema({"type": "object", "required": ["code"], "properties": {"code": {"type": "string",
                                                                                      "pattern": "^Z[0-9]{3}$"}}})
    with pytest.raises(Unsampleable, match=r"\.code: a string matching"):
        schema.sample(random.Random(0))
    assert schema.sample(random.Random(0), Vocabulary({"codes": ["Z123", "nope"]})) == {"code": "Z123"}


# --- the command line --------------------------------------------------------------------------------------------


def test_the_command_writes_both_reports_and_exits_by_the_result(toy: str, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    quick = ["--episodes", "2", "--fuzz", "40", "--max-steps", "12", "--timeout", "5"]
    assert main(["check", "--url", f"{toy}/clean", *quick, "--json", str(tmp_path / "r.json"),
                 "--markdown", str(tmp_path / "r.md")]) == 0
    printed = capsys.readouterr().out
    assert printed == (tmp_path / "r.md").read_text(encoding="utf-8")
    assert "**PASSED**: 10 pass, 0 fail, 0 not applicable." in printed
    assert json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["passed"] is True
    assert main(["check", "--url", f"{toy}/shared_state", *quick]) == 1
    assert "| session_isolation | FAIL |" in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "says"), [
    (["check"], "one of the two"),
    (["check", "org", "--url", "http://127.0.0.1:1"], "one of the two"),
    (["check", "org", "--json", "r.json"], "--json go with --url"),
    (["check", "--url", "http://127.0.0.1:1", "--reset-param", "env"], "KEY=VALUE"),
])
def test_the_command_refuses_what_it_cannot_do(argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert says in capsys.readouterr().err


def test_reset_params_go_with_every_reset_and_choose_the_schema(ours: str, capsys: pytest.CaptureFixture[str]) -> None:
    main(["check", "--url", ours, "--reset-param", "env=inbox", "--reset-param", "task=easy", "--episodes", "1",
          "--fuzz", "20", "--max-steps", "10"])
    printed = capsys.readouterr().out
    assert "action schema: InboxJointAction" in printed
    assert "reset_params {'env': 'inbox', 'task': 'easy'}" in printed


def test_without_the_server_extra_the_command_names_it() -> None:
    script = """
import sys
sys.modules["httpx"] = None  # as on an install without the [server] extra
from aaos.core.extras import DependencyNotInstalled, require
try:
    require("aaos.check.remote", "server")
except DependencyNotInstalled as error:
    print(error)
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert "httpx is not installed" in done.stdout and "pip install 'aaos[server]'" in done.stdout, done.stderr
