"""Opt-in upload of a benchmark output folder to a Hugging Face dataset repo.

    push_results(Path("runs/bench"), "your-name/aaos-bench")   # token from HF_TOKEN

One commit adds the run's files under `runs/<run id>/` and rewrites the repo's dataset card (README.md),
whose YAML `configs` point `datasets.load_dataset(repo_id, split="episodes")` at this run's results.jsonl
and whose body shows its leaderboard. The run id is a hash of the episode records, not of the clock, so
pushing the same results again lands in the same folder.

Everything that can be checked locally (repo id, output folder, token) is checked before any request.
The token goes to the Hub in the Authorization header only: it is never logged, printed or written, and
it is scrubbed from the text of any error.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import httpx2
import yaml
from huggingface_hub import CommitInfo, CommitOperationAdd, HfApi
from huggingface_hub.errors import HFValidationError
from huggingface_hub.utils import validate_repo_id

from aaos.bench.runner import read_records

RESULTS = "results.jsonl"
OUTPUT_FILES = (RESULTS, "leaderboard.csv", "leaderboard.json", "leaderboard.md", "leaderboard.html", "pairwise.csv",
                "noise_floor.csv", "pairwise.json", "gate.json", "policies.json", "trajectories.jsonl")
"""The files of an `aaos bench` output folder that are uploaded, those present; results.jsonl is required."""
RUNS_FOLDER = "runs"
SPLIT = "episodes"
"""The `datasets` split name of the episode records (not "train": records carry their own train/holdout split)."""
TIMING_FIELDS = frozenset({"wall_s", "latency_s", "mean_latency_s"})
"""Record fields that measure the clock, left out of the run id so that equal results get equal ids."""
REPO_ID_EXAMPLE = "e.g. 'your-name/aaos-bench'"


class HubPushError(ValueError):
    """Results could not be pushed; the message says what to fix and never contains the token. A ValueError,
    which `aaos` prints as "aaos: <message>" without a traceback."""


@dataclass(frozen=True)
class PushedRun:
    """Where a push landed: the run's folder in the repo, the commit, and a link to the folder at it."""

    run_id: str
    path_in_repo: str
    commit_url: str
    url: str


def push_results(folder: Path, repo_id: str, token: str | None = None, *, private: bool = True,
                 path_in_repo: str = RUNS_FOLDER, endpoint: str | None = None) -> PushedRun:
    """Upload the output folder of `aaos bench` to the dataset repo `repo_id` (created if missing, private
    unless `private=False`; an existing repo keeps its visibility) under `<path_in_repo>/<run id>/`, with a
    dataset card. `token` defaults to HF_TOKEN; `endpoint` defaults to HF_ENDPOINT or huggingface.co."""
    folder = Path(folder)
    check_repo_id(repo_id)
    files = output_files(folder)
    token = resolve_token(token)
    run_id = run_id_of(folder / RESULTS)
    run_path = run_folder(path_in_repo, run_id)
    operations = [CommitOperationAdd(f"{run_path}/{path.name}", path) for path in files]
    operations.append(CommitOperationAdd("README.md", dataset_card(folder, repo_id, run_path).encode()))
    api = HfApi(endpoint=endpoint)
    commit = _commit(api, token, repo_id, operations, private=private, message=f"aaos bench: add run {run_id}")
    folder_url = f"{api.endpoint}/datasets/{repo_id}/tree/{commit.oid}/{run_path}"
    return PushedRun(run_id, run_path, commit.commit_url, folder_url)


def check_push_target(repo_id: str, token: str | None = None) -> None:
    """What push_results checks before it reads the folder: a valid repo id and a token (argument or HF_TOKEN).
    For a caller that wants to fail before a long benchmark run rather than after it."""
    check_repo_id(repo_id)
    resolve_token(token)


def check_repo_id(repo_id: str) -> None:
    """A dataset repo id must be 'owner/name' with the Hub's allowed characters."""
    if repo_id.count("/") != 1:
        raise HubPushError(f"repo id {repo_id!r} must be 'owner/name' (your user or organisation name, a slash, "
                           f"then the dataset name), {REPO_ID_EXAMPLE}")
    try:
        validate_repo_id(repo_id)
    except HFValidationError as error:
        raise HubPushError(f"repo id {repo_id!r} is not valid: {error} ({REPO_ID_EXAMPLE})") from None


def output_files(folder: Path) -> list[Path]:
    """The files of the output folder to upload; fails unless it holds a results.jsonl with records."""
    results = folder / RESULTS
    if not results.is_file():
        raise HubPushError(f"{results} not found: pass the folder that `aaos bench --out` wrote its results to")
    if not read_records(results):
        raise HubPushError(f"{results} holds no episode records: run `aaos bench` into {folder} first")
    return [folder / name for name in OUTPUT_FILES if (folder / name).is_file()]


def resolve_token(token: str | None) -> str:
    """The token given, else HF_TOKEN."""
    token = (token or os.environ.get("HF_TOKEN") or "").strip()
    if not token:
        raise HubPushError("no Hugging Face token: set HF_TOKEN to a token with write access "
                           "(https://huggingface.co/settings/tokens)")
    return token


def run_id_of(results: Path) -> str:
    """16 hex digits of a SHA-256 of the episode records in a canonical order, without their timings: the
    same results give the same id however the episodes were scheduled, resumed or timed."""
    lines = sorted(json.dumps(_without_timings(record), sort_keys=True) for record in read_records(results))
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


def _without_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if k not in TIMING_FIELDS}
    return value


def run_folder(path_in_repo: str, run_id: str) -> str:
    """`<path_in_repo>/<run id>`; path_in_repo must be a relative folder ('' for the repo root)."""
    parent = PurePosixPath(path_in_repo)
    if parent.is_absolute() or ".." in parent.parts or "\\" in path_in_repo:
        raise HubPushError(f"path_in_repo {path_in_repo!r} must be a relative folder in the repo, e.g. "
                           f"{RUNS_FOLDER!r}")
    return (parent / run_id).as_posix()


def dataset_card(folder: Path, repo_id: str, run_path: str) -> str:
    """README.md: YAML metadata whose default config loads this run's results.jsonl, then its leaderboard."""
    metadata = {
        "pretty_name": "AAOS benchmark results",
        "tags": ["aaos", "benchmark", "multi-agent"],
        "configs": [{"config_name": "default", "data_files": [{"split": SPLIT, "path": f"{run_path}/{RESULTS}"}]}],
    }
    return f"---\n{yaml.safe_dump(metadata, sort_keys=False)}---\n\n{_card_body(folder, repo_id, run_path)}"


def _card_body(folder: Path, repo_id: str, run_path: str) -> str:
    leaderboard = folder / "leaderboard.md"
    table = leaderboard.read_text(encoding="utf-8") if leaderboard.is_file() else "(this run has no leaderboard.md)\n"
    return (
        "# AAOS benchmark results\n\n"
        "Episode records and leaderboards written by `aaos bench`. Each pushed run is a folder "
        f"`{PurePosixPath(run_path).parent.as_posix()}/<run id>/`; the run id is a hash of the run's episode "
        "records, so pushing the same results again updates the same folder. This card and the default "
        f"config describe the latest push, `{run_path}/`.\n\n"
        f"## Leaderboard\n\n{table}{_gate_line(folder)}\n"
        "## Load the episode records\n\n"
        "```python\nfrom datasets import load_dataset\n\n"
        f'episodes = load_dataset("{repo_id}", split="{SPLIT}")\n```\n\n'
        "One row per episode: policy, env, env_version, reward_version, task, scenario, seed, split (train or "
        "holdout), score and its components, actions, invalid actions, hard violations, model accounting, error. "
        "Compare scores only between rows of the same env, env_version and reward_version: the leaderboard "
        "never pools them. A leaderboard row with `unranked` set is a model's whose actions were mostly fallbacks "
        "(the secondary model or the champion): its score is not the model's, or a reference that reads hidden "
        "state (the oracle, `reads_hidden_state` in its records): not an agent; either is listed after the ranked "
        "rows.\n"
    )


def _gate_line(folder: Path) -> str:
    gate = folder / "gate.json"
    if not gate.is_file():
        return ""
    result = json.loads(gate.read_text(encoding="utf-8"))
    return f"\nPromotion gate: **{result['verdict']}**: {'; '.join(result['reasons'])}\n"


def _commit(api: HfApi, token: str, repo_id: str, operations: list[CommitOperationAdd], *, private: bool,
            message: str) -> CommitInfo:
    """Create the repo if needed and commit; a failure becomes a HubPushError raised outside the handler,
    so that no exception holding the request (and its Authorization header) stays attached to it."""
    try:
        api.create_repo(repo_id, token=token, repo_type="dataset", private=private, exist_ok=True)
        return api.create_commit(repo_id, operations, token=token, commit_message=message, repo_type="dataset")
    except (httpx2.HTTPError, OSError) as error:
        failure = _explain(error, repo_id, api.endpoint, token)
    raise HubPushError(failure)


def _explain(error: Exception, repo_id: str, endpoint: str, token: str) -> str:
    response = getattr(error, "response", None)
    status = response.status_code if response is not None else None
    detail = f"{type(error).__name__}: {error}".replace(token, "***")
    return f"pushing to the dataset {repo_id} on {endpoint} failed: {_hint(status, repo_id)}\n{detail}"


def _hint(status: int | None, repo_id: str) -> str:
    if status is None:
        return "the Hub could not be reached; check the network, the endpoint, and that HF_HUB_OFFLINE is unset"
    if status in (401, 403):
        owner = repo_id.split("/")[0]
        return f"HTTP {status}, the token was refused: set HF_TOKEN to a valid token with write access to {owner!r}"
    if status >= 500:
        return f"HTTP {status}, the Hub failed; try again later"
    return f"HTTP {status}, see the Hub's answer below"
