"""The benchmark: statistics against known cases, the promotion gate, and resuming after a kill."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import REPO_ROOT

from aaos.agents.llm import FALLBACK_LIMIT
from aaos.bench.report import gate, to_markdown, write_reports
from aaos.bench.runner import plan_jobs, read_records
from aaos.bench.stats import bootstrap_ci, pass_hat_k, summarise


def test_bootstrap_ci_matches_the_normal_approximation() -> None:
    values = [0.0, 1.0] * 50  # mean 0.5, standard error 0.05: the 95 % interval is about 0.5 ± 0.098
    low, high = bootstrap_ci(values)
    assert 0.39 <= low <= 0.42 and 0.58 <= high <= 0.61
    assert bootstrap_ci(values) == (low, high)  # seeded: the same values give the same interval
    assert bootstrap_ci([0.7] * 10) == pytest.approx((0.7, 0.7))
    assert bootstrap_ci([0.3]) == (0.3, 0.3)


def test_pass_hat_k_known_values() -> None:
    assert pass_hat_k(3, 5, 2) == pytest.approx(3 / 10)  # C(3,2) / C(5,2)
    assert pass_hat_k(5, 5, 3) == 1.0
    assert pass_hat_k(1, 5, 2) == 0.0
    assert pass_hat_k(2, 1, 2) is None


def _record(policy: str, split: str, score: float, hard: int = 0, seed: int = 0, env_version: str = "1",
            reward_version: str = "1", decisions: dict[str, int] | None = None) -> dict[str, object]:
    """An episode record; with `decisions` (per tier), a model policy's, its calls accounted as CallStats does."""
    llm = None if decisions is None else {"decisions": decisions, "calls": 10, "latency_s": 1.0,
                                          "prompt_tokens": 100, "completion_tokens": 10}
    return {"policy": policy, "split": split, "env": "org", "env_version": env_version,
            "reward_version": reward_version, "task": "full_episode", "scenario": "s", "seed": seed, "score": score,
            "components": {"efficiency": score}, "actions": 10, "invalid_actions": 1, "hard_violations": hard,
            "llm": llm, "wall_s": 0.1, "error": None}


def test_summary_and_gate() -> None:
    records = [_record("heuristic", "holdout", 0.9, seed=i) for i in range(4)]
    records += [_record("close", "holdout", 0.89, seed=i) for i in range(4)]
    records += [_record("worse", "holdout", 0.8, seed=i) for i in range(4)]
    records += [_record("reckless", "holdout", 0.95, hard=1, seed=i) for i in range(4)]
    rows = {r["policy"]: r for r in summarise(records)}
    assert rows["close"]["mean_score"] == pytest.approx(0.89)
    assert rows["close"]["success_rate"] == 1.0 and rows["worse"]["success_rate"] == 1.0
    assert rows["worse"]["invalid_action_rate"] == pytest.approx(0.1)
    summary = list(rows.values())
    assert gate(summary, "close").verdict == "PROMOTE"
    worse = gate(summary, "worse")
    assert worse.verdict == "NO_PROMOTE" and "below the champion" in worse.reasons[0]
    assert "below close's 0.890" in gate(summary, "worse", champion="close").reasons[0]  # another row: named
    assert "vs worse 0.800" in gate(summary, "close", champion="worse").reasons[0]
    reckless = gate(summary, "reckless")
    assert reckless.verdict == "NO_PROMOTE" and "hard violations" in reckless.reasons[0]
    assert gate(summary, "missing").verdict == "NO_PROMOTE"
    assert "| close | holdout | public holdout | 4 | 0.89 |" in to_markdown(summary)


def test_a_model_row_of_mostly_fallbacks_is_unranked_and_never_promoted(tmp_path: Path) -> None:
    half = {"primary": 5, "secondary": 2, "champion": 3}  # exactly FALLBACK_LIMIT: still the model's
    most = {"primary": 4, "secondary": 1, "champion": 5}  # 60 % fallbacks
    records = [_record("heuristic", "holdout", 0.9, seed=i) for i in range(4)]
    records += [_record("llm:half", "holdout", 0.9, seed=i, decisions=half) for i in range(4)]
    records += [_record("llm:dead", "holdout", 0.95, seed=i, decisions=most) for i in range(4)]
    rows = summarise(records)
    by_policy = {r["policy"]: r for r in rows}
    assert by_policy["heuristic"]["unranked"] is None and by_policy["llm:half"]["unranked"] is None
    assert by_policy["llm:half"]["fallback_rate"] == pytest.approx(FALLBACK_LIMIT)
    reason = by_policy["llm:dead"]["unranked"]
    assert reason == "24 of 40 actions (60 %) were decided by fallbacks, not the model (the limit is 50 %)"
    assert gate(rows, "llm:half").verdict == "PROMOTE"
    verdict = gate(rows, "llm:dead")  # the best mean of all, but not the model's
    assert verdict.verdict == "NO_PROMOTE" and verdict.reasons == [f"llm:dead is unranked: {reason}"]
    ranked = json.loads(write_reports(rows, tmp_path, records)["json"].read_text())
    assert [(r["policy"], r["unranked"]) for r in ranked] == [("heuristic", None), ("llm:half", None),
                                                              ("llm:dead", reason)]  # after every ranked row
    assert reason in (tmp_path / "leaderboard.md").read_text()
    assert "llm:dead (unranked)" in (tmp_path / "leaderboard.html").read_text()


def test_reports_are_written(tmp_path: Path) -> None:
    records = [_record("heuristic", "train", 0.9), _record("random", "train", 0.3)]
    paths = write_reports(summarise(records), tmp_path, records)
    assert [r["policy"] for r in json.loads(paths["json"].read_text())] == ["heuristic", "random"]
    assert paths["csv"].read_text().splitlines()[0].startswith(
        "rank,env,env_version,reward_version,policy,split,split_label,episodes,mean_score")
    assert "plotly" in paths["html"].read_text()[:100_000].lower()


def test_rows_of_different_versions_are_never_pooled_nor_gated_together(tmp_path: Path) -> None:
    old = [_record("heuristic", "holdout", 0.9, seed=i, reward_version="1") for i in range(4)]
    old += [_record("candidate", "holdout", 0.5, seed=i, reward_version="1") for i in range(4)]
    new = [_record("heuristic", "holdout", 0.6, seed=i, reward_version="2") for i in range(4)]
    new += [_record("candidate", "holdout", 0.62, seed=i, reward_version="2") for i in range(4)]
    lone = [_record("solo", "holdout", 0.99, seed=i, env_version="9") for i in range(4)]
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in old + new + lone))
    rows = summarise(read_records(results))
    by_key = {(r["policy"], r["reward_version"]): r for r in rows}
    assert len(rows) == 5  # heuristic and candidate under each reward version, solo under env version 9
    assert by_key[("heuristic", "1")]["mean_score"] == pytest.approx(0.9)
    assert by_key[("heuristic", "2")]["mean_score"] == pytest.approx(0.6)
    assert all(r["episodes"] == 4 and r["env"] == "org" for r in rows)
    verdict = gate(rows, "candidate")  # behind by 0.4 under reward v1, ahead under v2: v1 alone blocks promotion
    assert verdict.verdict == "NO_PROMOTE" and len(verdict.reasons) == 1
    assert "reward v1" in verdict.reasons[0] and "below the champion" in verdict.reasons[0]
    assert gate([r for r in rows if r["reward_version"] == "2"], "candidate").verdict == "PROMOTE"
    unmatched = gate(rows, "solo")  # the champion was never played on env version 9: nothing to compare with
    assert unmatched.verdict == "NO_PROMOTE" and "same environment version" in unmatched.reasons[0]
    ranked = json.loads(write_reports(rows, tmp_path, read_records(results))["json"].read_text())
    assert [(r["reward_version"], r["policy"]) for r in ranked if r["env_version"] == "1"] == [
        ("1", "heuristic"), ("1", "candidate"), ("2", "candidate"), ("2", "heuristic")]


def test_a_resumed_run_plays_again_the_episodes_recorded_under_other_versions(tmp_path: Path) -> None:
    import aaos
    from aaos.bench.runner import run
    from aaos.policies import baseline

    spec = aaos.spec()
    jobs = plan_jobs(["noop"], ["org_simulation"], ["product_launch_failure"], 1, ("train",))
    out = tmp_path / "results.jsonl"
    [record] = run(jobs, {"noop": baseline("noop")}, out)
    assert (record["env"], record["env_version"], record["reward_version"]) == ("org", spec.version,
                                                                                 spec.reward_version)
    out.write_text(json.dumps({**record, "reward_version": "stale"}) + "\n")
    [again] = run(jobs, {"noop": baseline("noop")}, out)
    assert again["reward_version"] == spec.reward_version
    assert [r["reward_version"] for r in read_records(out)] == ["stale", spec.reward_version]


def test_a_policy_reading_hidden_state_is_played_but_never_ranked_nor_promoted(tmp_path: Path) -> None:
    from aaos.bench.runner import run
    from aaos.bench.stats import READS_HIDDEN_STATE
    from aaos.policies import baseline

    jobs = plan_jobs(["oracle", "heuristic"], ["org_simulation"], ["product_launch_failure"], 1, ("holdout",))
    records = run(jobs, {name: baseline(name) for name in ("oracle", "heuristic")}, tmp_path / "results.jsonl")
    assert [(r["policy"], r["reads_hidden_state"]) for r in records] == [("oracle", True), ("heuristic", False)]
    rows = summarise(records)
    assert {r["policy"]: r["unranked"] for r in rows} == {"oracle": READS_HIDDEN_STATE, "heuristic": None}
    oracle = next(r for r in rows if r["policy"] == "oracle")
    rows.append({**oracle, "policy": "oracle-best", "mean_score": 1.0})  # a perfect score does not rank it either
    ranked = json.loads(write_reports(rows, tmp_path, records)["json"].read_text())
    assert [r["policy"] for r in ranked] == ["heuristic", "oracle-best", "oracle"]  # unranked after every ranked row
    verdict = gate(rows, "oracle")
    assert verdict.verdict == "NO_PROMOTE" and verdict.reasons[0] == f"oracle is unranked: {READS_HIDDEN_STATE}"


def test_plan_jobs_keeps_holdout_scenarios_out_of_train() -> None:
    jobs = plan_jobs(["heuristic"], ["org_simulation"], ["product_launch_failure", "vendor_outage_cascade"], 2)
    seeds = {(j.scenario, j.seed) for j in jobs}
    assert ("product_launch_failure", 0) in seeds and ("product_launch_failure", 10_000) in seeds
    assert ("vendor_outage_cascade", 0) not in seeds and ("vendor_outage_cascade", 10_001) in seeds
    assert len(jobs) == 6


def test_bench_resumes_after_a_kill(tmp_path: Path) -> None:
    out = tmp_path / "run"
    command = [sys.executable, "-m", "aaos.cli", "bench", "--policy", "heuristic", "--policy", "random",
               "--episodes", "8", "--concurrency", "1", "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    results = out / "results.jsonl"
    process = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while len(read_records(results)) < 5:
        assert process.poll() is None, "the run finished before it could be interrupted"
        assert time.monotonic() < deadline
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    before = read_records(results)
    expected = len(plan_jobs(["heuristic", "random"], [t for t in ("org_simulation", "crisis_management",
                                                                   "full_episode")],
                             [s for s in _scenarios()], 8))
    assert 5 <= len(before) < expected
    subprocess.run(command, cwd=REPO_ROOT, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = read_records(results)
    keys = [(r["policy"], r["task"], r["scenario"], r["seed"]) for r in after]
    assert len(keys) == len(set(keys)) == expected  # nothing lost, nothing run twice
    assert after[: len(before)] == before  # what was written before the kill is kept as it was
    assert (out / "leaderboard.md").exists()


def _scenarios() -> list[str]:
    import aaos

    return [s["id"] for s in aaos.list_scenarios()]


def test_benchmark_trajectories_replay_exactly(tmp_path: Path) -> None:
    from aaos.bench.runner import run
    from aaos.policies import baseline
    from aaos.training.episodes import read_episodes
    from aaos.training.replay import check

    jobs = plan_jobs(["heuristic", "random"], ["crisis_management"], ["silent_data_drift"], 1)
    trajectories = tmp_path / "trajectories.jsonl"
    records = run(jobs, {"heuristic": baseline("heuristic"), "random": baseline("random")},
                  tmp_path / "results.jsonl", concurrency=2, trajectories=trajectories)
    episodes = read_episodes([trajectories])
    assert len(episodes) == len(records) == 4
    assert sorted(len(e) for e in episodes) == sorted(r["steps"] for r in records)
    assert all("observation" in step for episode in episodes for step in episode)
    assert all(check(episode) == () for episode in episodes)


def test_recorded_observations_render_the_prompt_the_model_saw(tmp_path: Path) -> None:
    """An observation read back from a benchmark's trajectories renders the same compact prompt as the live one
    (a file with sorted keys once reordered the inbox's opened email, so a model asked again saw a prompt it was
    never trained on)."""
    import aaos
    from aaos.agents.prompts import compact_messages
    from aaos.bench.runner import run
    from aaos.policies import baseline
    from aaos.training.episodes import meta_of, read_episodes

    jobs = plan_jobs(["heuristic"], ["easy"], ["retail_helpdesk"], 1, ("holdout",), env="inbox")
    trajectories = tmp_path / "trajectories.jsonl"
    run(jobs, {"heuristic": baseline("heuristic")}, tmp_path / "results.jsonl", trajectories=trajectories)
    [episode] = read_episodes([trajectories], "inbox")
    meta, spec = meta_of(episode[0]), aaos.spec("inbox")
    env = aaos.make(meta.task, scenario=meta.scenario, seed=meta.seed, env="inbox")
    observation = env.reset()
    opened = 0
    for step in episode:
        assert compact_messages(step["observation"], spec) == compact_messages(observation, spec)
        opened += step["observation"]["agent_observations"]["triage_agent"].get("opened_email") is not None
        observation = env.step(step["joint_action"]).observation
    assert opened > 0
