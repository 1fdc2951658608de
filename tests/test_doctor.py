"""`aaos doctor` (issue 12, item 8): the token said present or absent (never its value), the model endpoint checked
against the fault-injecting fake (tests/fake_openai.py), the champion's easy and medium runs, the exit status, and
the Space writing the same audit to its log at startup."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from broken_envs import HALF_REWARD
from fake_openai import Script, serve
from helpers import REPO_ROOT, registered
from ui_fixtures import ARTIFACTS, running_space, wait_until

import aaos
from aaos.cli import main as cli

TOKEN = "hf_" + "D0ct0rS3cr3t" * 3
MODEL_VARIABLES = ("MODEL_NAME", "API_BASE_URL", "HF_TOKEN")


def doctor(*args: str, **variables: str) -> subprocess.CompletedProcess[str]:
    """`aaos doctor` in a subprocess with only these model variables set."""
    env = {k: v for k, v in os.environ.items() if k not in MODEL_VARIABLES}
    return subprocess.run([sys.executable, "-m", "aaos.cli", "doctor", *args], cwd=REPO_ROOT,
                          env={**env, **variables}, capture_output=True, text=True, timeout=120, check=False)


def line_of(output: str, name: str) -> str:
    return next(line for line in output.splitlines() if line.split("  ", 1)[-1].strip().startswith(name))


def champion_score(task: str) -> float:
    env = aaos.make(task, seed=0, env="inbox")
    policy = aaos.policies.make("heuristic", seed=0, env="inbox")
    observation = env.reset()
    while True:
        result = env.step(policy.act(observation))
        observation = result.observation
        if result.done:
            return float(result.info["score"])


@pytest.fixture
def no_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in MODEL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    yield


@pytest.mark.usefixtures("no_model")
def test_without_a_model_it_skips_the_endpoint_and_plays_the_champion(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["doctor", "--env", "inbox"]) == 0
    out = capsys.readouterr().out
    assert line_of(out, "token").startswith("skip") and "HF_TOKEN is absent" in out
    assert line_of(out, "model endpoint").startswith("skip") and "MODEL_NAME is unset" in out
    for task in ("easy", "medium"):
        line = line_of(out, f"champion inbox/{task}")
        assert line.startswith("ok") and f"score {champion_score(task):.3f}" in line
    assert "inbox/hard" not in out and "champion org/" not in out  # only the easy and medium tasks of --env
    assert out.splitlines()[-1] == "2 ok, 0 warnings, 2 skipped, 0 failed"


@pytest.mark.usefixtures("no_model")
def test_every_registered_environment_is_audited_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["doctor"]) == 0
    out = capsys.readouterr().out
    for env_id in aaos.env_ids():
        assert f"champion {env_id}/" in out


def test_a_reachable_model_is_timed_and_gets_the_token_that_is_never_shown() -> None:
    script = Script(modes=["ok"], latency_s=0.05)
    with serve(script) as url:
        done = doctor("--env", "inbox", MODEL_NAME="fake-model", API_BASE_URL=url, HF_TOKEN=TOKEN)
    assert done.returncode == 0, done.stdout + done.stderr
    assert line_of(done.stdout, "token").startswith("ok") and "HF_TOKEN is present" in done.stdout
    endpoint = line_of(done.stdout, "model endpoint")
    assert endpoint.startswith("ok") and f"fake-model at {url} answered in" in endpoint
    assert int(endpoint.rsplit("in ", 1)[1].split(" ms")[0]) >= 50  # the fake's latency, measured
    assert script.headers[0]["authorization"] == f"Bearer {TOKEN}"  # sent to the endpoint, and only there
    assert script.requests[0]["max_tokens"] == 1
    assert TOKEN not in done.stdout + done.stderr and TOKEN[3:11] not in done.stdout + done.stderr


@pytest.mark.parametrize(("mode", "words"), [("server_error", "HTTP 500"), ("timeout", "no answer within 0.5 s"),
                                             ("not_json", None)])
def test_an_erroring_endpoint_fails_the_audit(mode: str, words: str | None) -> None:
    with serve(Script(modes=[mode])) as url:
        done = doctor("--env", "inbox", "--timeout", "0.5", MODEL_NAME="fake-model", API_BASE_URL=url,
                      HF_TOKEN=TOKEN)
    endpoint = line_of(done.stdout, "model endpoint")
    if words is None:  # a chat completion whose text is not an action still answers: the endpoint is up
        assert done.returncode == 0 and endpoint.startswith("ok")
    else:
        assert done.returncode == 1 and endpoint.startswith("fail") and words in endpoint
        assert done.stdout.splitlines()[-1].endswith("1 failed")
    assert line_of(done.stdout, "champion inbox/easy").startswith("ok")  # the other checks still run
    assert TOKEN not in done.stdout + done.stderr


def test_an_unreachable_endpoint_fails_and_a_missing_token_is_only_a_warning() -> None:
    done = doctor("--env", "inbox", "--timeout", "2", MODEL_NAME="fake-model", API_BASE_URL="http://127.0.0.1:9/v1")
    assert done.returncode == 1
    assert line_of(done.stdout, "token").startswith("warn") and "HF_TOKEN is absent" in done.stdout
    endpoint = line_of(done.stdout, "model endpoint")
    assert endpoint.startswith("fail") and "ConnectError" in endpoint


def test_a_token_echoed_back_in_an_error_is_redacted() -> None:
    """Even an endpoint address that carries the token (a misconfiguration) never shows it."""
    done = doctor("--env", "inbox", "--timeout", "2", MODEL_NAME="fake-model",
                  API_BASE_URL=f"http://127.0.0.1:9/{TOKEN}/v1", HF_TOKEN=TOKEN)
    assert done.returncode == 1 and "[redacted]" in line_of(done.stdout, "model endpoint")
    assert TOKEN not in done.stdout + done.stderr


@pytest.mark.usefixtures("no_model")
def test_a_champion_whose_return_is_not_its_score_fails(capsys: pytest.CaptureFixture[str]) -> None:
    with registered(toy_half_reward=HALF_REWARD):
        assert cli(["doctor", "--env", "toy_half_reward"]) == 1
    line = line_of(capsys.readouterr().out, "champion toy_half_reward/")
    assert line.startswith("fail") and "should equal a score in [0, 1]" in line


@pytest.mark.usefixtures("no_model")
def test_an_environment_without_a_champion_is_skipped_saying_why(capsys: pytest.CaptureFixture[str]) -> None:
    with registered(bare="bare_env:KIT"):
        assert cli(["doctor", "--env", "bare"]) == 0
    out = capsys.readouterr().out
    line = line_of(out, "champion bare")
    assert line.startswith("skip") and "its kit gives no champion" in line
    assert out.splitlines()[-1] == "0 ok, 0 warnings, 3 skipped, 0 failed"


def test_the_space_logs_the_audit_once_it_is_up_without_the_token() -> None:
    log = ARTIFACTS / "doctor_space.log"
    variables = {k: "" for k in ("MODEL_NAME", "API_BASE_URL")}
    for _ in running_space(log, HF_TOKEN=TOKEN, **variables):
        wait_until(lambda: "failed" in log.read_text(encoding="utf-8"), 60, "the startup audit in the log")
    text = log.read_text(encoding="utf-8")
    audit = [line.removeprefix("aaos doctor: ") for line in text.splitlines() if line.startswith("aaos doctor: ")]
    assert line_of("\n".join(audit), "token").startswith("ok")
    assert any(line.startswith("ok") and "champion inbox/medium" in line for line in audit)
    assert audit[-1].endswith("0 failed")
    assert TOKEN not in text and TOKEN[3:11] not in text
