"""Pushing benchmark results to a Hugging Face dataset, against the offline fake of the Hub's upload routes."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import huggingface_hub.constants
import pytest
import yaml
from fake_hub import FakeHub, serve
from fake_openai import free_port

from aaos.bench.hub import HubPushError, PushedRun, check_push_target, push_results, run_id_of
from aaos.bench.report import gate, write_reports
from aaos.bench.runner import plan_jobs, run
from aaos.bench.stats import summarise
from aaos.policies import baseline

TOKEN = "hf_" + "Hb4k" * 8  # looks like a real token; must reach the fake Hub's auth header only
REPO = "alice/aaos-bench"
ROUTES = ["POST /api/repos/create", "POST /api/validate-yaml", f"POST /api/datasets/{REPO}/preupload/main",
          f"POST /api/datasets/{REPO}/commit/main"]
"""Create the repo, check the card's YAML, ask for upload modes, commit: no LFS or Xet route."""


def bench(out: Path, scenario: str = "product_launch_failure") -> Path:
    """A tiny real benchmark (heuristic and random, 1 task, 1 scenario, 1 train seed) with every output file."""
    specs = {name: baseline(name) for name in ("heuristic", "random")}
    jobs = plan_jobs(list(specs), ["org_simulation"], [scenario], 1, ("train",))
    records = run(jobs, specs, out / "results.jsonl", trajectories=out / "trajectories.jsonl")
    rows = summarise(records)
    write_reports(rows, out, records)
    (out / "policies.json").write_text(json.dumps([s.describe() for s in specs.values()], indent=2) + "\n")
    (out / "gate.json").write_text(json.dumps(gate(rows, "random").to_dict(), indent=2) + "\n")
    return out


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One benchmark output folder, shared and never modified."""
    return bench(tmp_path_factory.mktemp("bench"))


@pytest.fixture(autouse=True)
def hub_client(monkeypatch: pytest.MonkeyPatch) -> None:
    """No HF_TOKEN from the caller's shell; huggingface_hub neither in offline mode (which would block even the
    loopback fake) nor fetching its agent registry from huggingface.co (telemetry off)."""
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_DISABLE_TELEMETRY", True)


@pytest.fixture
def hub() -> Iterator[FakeHub]:
    with serve(FakeHub()) as fake:
        yield fake


def push(folder: Path, hub: FakeHub, token: str | None = TOKEN, **options: Any) -> PushedRun:
    return push_results(folder, REPO, token, endpoint=hub.url, **options)


def card_metadata(card: bytes) -> dict[str, object]:
    text = card.decode()
    assert text.startswith("---\n")
    return yaml.safe_load(text[4:].split("\n---\n", 1)[0])


def assert_token_hidden(caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> None:
    captured = capsys.readouterr()
    assert TOKEN not in captured.out + captured.err
    assert TOKEN not in caplog.text


def test_push_creates_a_private_dataset_with_the_run_files(results: Path, hub: FakeHub,
                                                            caplog: pytest.LogCaptureFixture,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    caplog.set_level(logging.DEBUG)
    pushed = push(results, hub)
    repo = hub.repos[REPO]
    assert (repo.repo_type, repo.visibility) == ("dataset", "private")
    assert hub.routes == ROUTES
    uploaded = {path: content for path, content in repo.files.items() if path != "README.md"}
    assert uploaded == {f"runs/{pushed.run_id}/{p.name}": p.read_bytes() for p in results.iterdir()}
    assert len(uploaded) == 11  # results, 4 leaderboards, 3 paired reports, gate, policies, trajectories
    assert pushed.path_in_repo == f"runs/{pushed.run_id}"
    assert pushed.commit_url.startswith(f"{hub.url}/datasets/{REPO}/commit/")
    commit = pushed.commit_url.rsplit("/", 1)[1]
    assert pushed.url == f"{hub.url}/datasets/{REPO}/tree/{commit}/runs/{pushed.run_id}"
    assert repo.commits == [{"summary": f"aaos bench: add run {pushed.run_id}", "description": ""}]
    assert hub.authorizations == [f"Bearer {TOKEN}"] * len(ROUTES)
    assert not any(TOKEN.encode() in content for content in repo.files.values())
    assert_token_hidden(caplog, capsys)


def test_the_card_loads_this_runs_results(results: Path, hub: FakeHub) -> None:
    pushed = push(results, hub)
    card = hub.repos[REPO].files["README.md"]
    metadata = card_metadata(card)
    [config] = metadata["configs"]  # type: ignore[index]
    assert config == {"config_name": "default",
                      "data_files": [{"split": "episodes", "path": f"{pushed.path_in_repo}/results.jsonl"}]}
    assert f"{pushed.path_in_repo}/results.jsonl" in hub.repos[REPO].files
    body = card.decode()
    assert (results / "leaderboard.md").read_text() in body
    assert "Promotion gate: **" in body
    assert f'load_dataset("{REPO}", split="episodes")' in body


def test_datasets_loads_the_pushed_repo(results: Path, hub: FakeHub, tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    push(results, hub)
    clone = tmp_path / "clone"
    for path, content in hub.repos[REPO].files.items():
        (clone / path).parent.mkdir(parents=True, exist_ok=True)
        (clone / path).write_bytes(content)
    episodes = datasets.load_dataset(str(clone), split="episodes", cache_dir=str(tmp_path / "cache"))
    assert sorted(episodes["policy"]) == ["heuristic", "random"]


def test_run_id_follows_the_results_not_the_clock(results: Path, hub: FakeHub, tmp_path: Path) -> None:
    again = bench(tmp_path / "again")  # the same episodes, timed anew
    assert run_id_of(again / "results.jsonl") == run_id_of(results / "results.jsonl")
    shuffled = tmp_path / "shuffled"
    shuffled.mkdir()
    lines = (results / "results.jsonl").read_text().splitlines(keepends=True)
    (shuffled / "results.jsonl").write_text("".join(reversed(lines)))
    assert run_id_of(shuffled / "results.jsonl") == run_id_of(results / "results.jsonl")
    other = bench(tmp_path / "other", scenario="resource_conflict")
    assert run_id_of(other / "results.jsonl") != run_id_of(results / "results.jsonl")
    assert push(results, hub).path_in_repo == push(again, hub).path_in_repo != push(other, hub).path_in_repo


def test_pushing_the_same_results_again_changes_nothing(results: Path, hub: FakeHub) -> None:
    first = push(results, hub)
    files = dict(hub.repos[REPO].files)
    del hub.requests[:]
    assert push(results, hub) == first
    assert hub.routes == [*ROUTES[:3], f"GET /api/datasets/{REPO}/revision/main"]  # no commit: nothing changed
    assert hub.repos[REPO].files == files and len(hub.repos[REPO].commits) == 1


def test_public_push_to_the_root_with_the_token_from_the_environment(results: Path, hub: FakeHub,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    pushed = push(results, hub, token=None, private=False, path_in_repo="")
    assert hub.repos[REPO].visibility == "public"
    assert pushed.path_in_repo == pushed.run_id
    assert f"{pushed.run_id}/results.jsonl" in hub.repos[REPO].files
    assert hub.authorizations == [f"Bearer {TOKEN}"] * len(ROUTES)


@pytest.mark.parametrize(("repo_id", "message"), [
    ("aaos-bench", "must be 'owner/name'"),
    ("alice/bench/extra", "must be 'owner/name'"),
    ("alice/bad name", "is not valid"),
    ("alice/x--y", "is not valid"),
])
def test_a_bad_repo_id_fails_before_any_request(results: Path, hub: FakeHub, repo_id: str, message: str) -> None:
    with pytest.raises(HubPushError, match=message):
        push_results(results, repo_id, TOKEN, endpoint=hub.url)
    assert hub.requests == []


def test_missing_results_fail_before_any_request(hub: FakeHub, tmp_path: Path) -> None:
    with pytest.raises(HubPushError, match=r"results\.jsonl not found: pass the folder that `aaos bench --out`"):
        push(tmp_path, hub)
    (tmp_path / "results.jsonl").write_text("")
    with pytest.raises(HubPushError, match="holds no episode records"):
        push(tmp_path, hub)
    assert hub.requests == []


def test_a_missing_token_or_bad_folder_fails_before_any_request(results: Path, hub: FakeHub) -> None:
    with pytest.raises(HubPushError, match="no Hugging Face token: set HF_TOKEN"):
        push(results, hub, token=None)
    with pytest.raises(HubPushError, match="no Hugging Face token"):
        check_push_target(REPO)
    with pytest.raises(HubPushError, match="must be 'owner/name'"):
        check_push_target("aaos-bench", TOKEN)
    check_push_target(REPO, TOKEN)
    with pytest.raises(HubPushError, match="must be a relative folder"):
        push(results, hub, path_in_repo="../elsewhere")
    assert hub.requests == []


@pytest.mark.parametrize(("status", "hint"), [(401, "the token was refused: set HF_TOKEN"),
                                                  (500, "the Hub failed; try again later")])
def test_a_hub_error_is_clear_and_hides_the_token(results: Path, hub: FakeHub, status: int, hint: str,
                                                  caplog: pytest.LogCaptureFixture,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    caplog.set_level(logging.DEBUG)
    hub.commit_status = status  # the fake's error body echoes the Authorization header
    with pytest.raises(HubPushError) as failure:
        push(results, hub)
    message = str(failure.value)
    assert message.startswith(f"pushing to the dataset {REPO} on {hub.url} failed: HTTP {status}, ")
    assert hint in message.splitlines()[0]
    assert "Bearer ***" in message  # the echoed header, scrubbed
    assert TOKEN not in "".join(traceback.format_exception(failure.value))
    assert failure.value.__cause__ is None and failure.value.__context__ is None
    assert hub.routes == ROUTES and not hub.repos[REPO].files
    assert_token_hidden(caplog, capsys)


def test_an_unreachable_hub_is_reported(results: Path, tmp_path: Path) -> None:
    shutil.copy(results / "results.jsonl", tmp_path)
    with pytest.raises(HubPushError, match="the Hub could not be reached"):
        push_results(tmp_path, REPO, TOKEN, endpoint=f"http://127.0.0.1:{free_port()}")


def run_cli(out: Path, hub: FakeHub, *options: str, token: str = TOKEN) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_ENDPOINT": hub.url, "HF_TOKEN": token, "HF_HUB_DISABLE_TELEMETRY": "1",
           "HF_HUB_OFFLINE": "0"}
    command = [sys.executable, "-m", "aaos.cli", "bench", "--policy", "heuristic", "--task", "org_simulation",
               "--scenario", "product_launch_failure", "--split", "train", "--episodes", "1", "--out", str(out),
               *options]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)


def test_aaos_bench_push_to_hub_uploads_the_run(hub: FakeHub, tmp_path: Path) -> None:
    done = run_cli(tmp_path, hub, "--push-to-hub", REPO, "--hub-public")
    assert done.returncode == 0, done.stderr
    run_id = run_id_of(tmp_path / "results.jsonl")
    assert f"pushed run {run_id}: {hub.url}/datasets/{REPO}/tree/" in done.stdout
    assert hub.repos[REPO].visibility == "public"
    assert hub.repos[REPO].files[f"runs/{run_id}/results.jsonl"] == (tmp_path / "results.jsonl").read_bytes()
    assert TOKEN not in done.stdout + done.stderr


def test_aaos_bench_with_a_bad_repo_id_fails_before_running(hub: FakeHub, tmp_path: Path) -> None:
    done = run_cli(tmp_path, hub, "--push-to-hub", "no-slash")
    assert done.returncode == 2 and "must be 'owner/name'" in done.stderr
    assert not (tmp_path / "results.jsonl").exists() and hub.requests == []
