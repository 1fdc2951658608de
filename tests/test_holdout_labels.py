"""Public vs salted holdout, said (issue 34, item 7). The unsalted holdout is public by design: anyone draws its
episodes from the code, so an agent can recognise one by its first observation and replay its twin. Records and
leaderboard rows therefore say which holdout they are of ("public holdout" or "salted holdout",
aaos.core.seeding.split_label), and public and salted episodes are never pooled in one row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aaos
from aaos.bench.report import LEADERBOARD_COLUMNS, write_reports
from aaos.bench.runner import plan_jobs, run
from aaos.bench.stats import summarise
from aaos.core.seeding import HOLDOUT_SEED_START, salt_fingerprint, salted, split_label
from aaos.policies import baseline

SALT = "labels-test-salt"


def first_view(seed: int) -> str:
    return json.dumps(aaos.make("hard", scenario="retail_helpdesk", seed=seed, env="inbox").reset(), sort_keys=True)


def test_a_public_holdout_episode_is_recognised_by_its_first_observation_and_a_salted_one_is_not() -> None:
    public = {first_view(seed): seed for seed in range(HOLDOUT_SEED_START, HOLDOUT_SEED_START + 50)}
    assert public[first_view(HOLDOUT_SEED_START + 7)] == HOLDOUT_SEED_START + 7  # the twin to replay is found
    with salted(SALT):
        drawn = [first_view(seed) for seed in range(HOLDOUT_SEED_START, HOLDOUT_SEED_START + 5)]
    assert not any(view in public for view in drawn)


def test_the_label_says_train_public_or_salted() -> None:
    assert split_label("train", salt_fingerprint(SALT)) == "train"
    assert split_label("holdout", None) == "public holdout"
    assert split_label("holdout", salt_fingerprint(SALT)) == "salted holdout"


def _run(out: Path) -> list[dict[str, Any]]:
    jobs = plan_jobs(["noop"], ["easy"], ["saas_helpdesk"], 1, ("train", "holdout"), env="inbox")
    return run(jobs, {"noop": baseline("noop")}, out / "results.jsonl", concurrency=1)


def test_records_and_leaderboard_rows_say_which_holdout_and_never_pool_the_two(tmp_path: Path) -> None:
    public = _run(tmp_path / "public")
    with salted(SALT):
        salted_records = _run(tmp_path / "salted")
    assert [(r["split"], r["split_label"], r["holdout_salt"]) for r in public] == [
        ("train", "train", None), ("holdout", "public holdout", None)]
    assert [(r["split_label"], r["holdout_salt"]) for r in salted_records] == [
        ("train", salt_fingerprint(SALT)), ("salted holdout", salt_fingerprint(SALT))]

    rows = summarise(public + salted_records)
    assert sorted((r["split"], r["split_label"], r["episodes"]) for r in rows) == [
        ("holdout", "public holdout", 1), ("holdout", "salted holdout", 1), ("train", "train", 2)]
    old = [{k: v for k, v in r.items() if k != "split_label"} for r in public]  # records older than the field
    assert {r["split_label"] for r in summarise(old)} == {"train", "public holdout"}
    assert "split_label" in LEADERBOARD_COLUMNS
    paths = write_reports(rows, tmp_path / "report", public + salted_records)
    board = paths["md"].read_text()
    assert "| holdout | public holdout |" in board and "| holdout | salted holdout |" in board
    assert paths["csv"].read_text().splitlines()[0].split(",")[5:7] == ["split", "split_label"]
