"""AAOS as Inspect AI tasks (aaos.evals, the `inspect` extra): every environment and task plays as Inspect samples
that Inspect scores exactly as `aaos bench` scores the same episodes (the champion as the player); the model agent
asks a model, through Inspect, what `aaos bench` asks it (the fault-injecting fake endpoint records both), with the
same decisions, repairs and scores; the holdout salt is applied and never written to the log; `inspect eval` runs
the task file and the installed task by name, and `inspect view` serves the transcripts. The slow test plays an
episode with the real local model through `inspect eval` and through `aaos bench`: the same score."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_openai import Script, serve
from helpers import REPO_ROOT, free_port
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog, EvalSample, read_eval_log

import aaos
from aaos.agents.llm import LLMConfig, Mode, ResponseFormat
from aaos.agents.local_model import MODEL_NAME, LocalModelServer, missing
from aaos.bench.runner import Job, plan_jobs, run
from aaos.cli import build_parser
from aaos.core.extras import DependencyNotInstalled
from aaos.core.seeding import HOLDOUT_SALT_ENV, salt_fingerprint
from aaos.evals.episode import inspect_schema
from aaos.evals.inspect_tasks import bench
from aaos.policies import PolicySpec, baseline

TASK_FILE = "aaos/evals/inspect_tasks.py@bench"
FAKE_MODEL = "openai-api/fake/fake"
"""Inspect's OpenAI-compatible provider (chat completions, as `aaos bench` sends them); its key from FAKE_API_KEY."""
COMPARED = ("score", "success", "steps", "return", "components", "penalty", "actions", "invalid_actions",
            "hard_violations", "split", "split_label", "holdout_salt", "env_version", "reward_version")
"""What a benchmark record says of the episode itself (not of who played it or how long it took)."""
INSPECT = Path(sys.executable).with_name("inspect")


def _eval(task: Any, log_dir: Path, model: str = "none", **options: Any) -> EvalLog:
    [log] = inspect_eval(task, model=model, log_dir=str(log_dir), display="none", **options)
    assert log.status == "success", log.error
    return log


def _scores(log: EvalLog) -> dict[str, dict[str, Any]]:
    """Each sample's score metadata (its benchmark record), by episode (task|scenario|seed)."""
    assert log.samples is not None
    return {str(sample.id): _score(sample).metadata or {} for sample in log.samples}


def _score(sample: EvalSample) -> Any:
    assert sample.scores is not None
    return sample.scores["episode_score"]


def _bench(jobs: list[Job], spec: PolicySpec, out: Path) -> dict[str, dict[str, Any]]:
    """`aaos bench`'s records of the jobs, by episode."""
    return {f"{r['task']}|{r['scenario']}|{r['seed']}": r for r in run(jobs, {jobs[0].policy: spec}, out)}


def _same_episodes(inspected: dict[str, dict[str, Any]], benched: dict[str, dict[str, Any]]) -> None:
    assert sorted(inspected) == sorted(benched)
    for episode, record in benched.items():
        assert record["error"] is None, record["error"]
        assert {key: inspected[episode][key] for key in COMPARED} == {key: record[key] for key in COMPARED}, episode


def test_every_task_plays_as_samples_that_inspect_scores_as_aaos_bench_does(tmp_path: Path) -> None:
    """The champion as the player in every environment (and the seeded random policy in one), on every task, a
    train and a holdout scenario, both splits: one sample per episode `aaos bench` plans, each scored as the benchmark
    scores it."""
    played = [*((env, "heuristic") for env in aaos.env_ids()), ("inbox", "random")]
    scenarios = {env: [aaos.list_scenarios(split, env)[0]["id"] for split in ("train", "holdout")]
                 for env in aaos.env_ids()}
    logs = inspect_eval([bench(env=env, scenario=scenarios[env], split="both", episodes=1, policy=policy)
                         for env, policy in played], model="none", log_dir=str(tmp_path), display="none")
    for (env, policy), log in zip(played, logs, strict=True):
        assert log.status == "success", log.error
        tasks = [str(t["id"]) for t in aaos.list_tasks(env=env)]
        jobs = plan_jobs([policy], tasks, scenarios[env], 1, ("train", "holdout"), env)
        assert {job.scenario for job in jobs if job.seed < 10_000} == {scenarios[env][0]}  # the holdout one: no train
        _same_episodes(_scores(log), _bench(jobs, baseline(policy), tmp_path / f"{env}-{policy}.jsonl"))
        assert log.results is not None
        metrics = log.results.scores[0].metrics
        assert set(tasks) <= set(metrics)  # the mean of each task beside the overall one
        records = _scores(log).values()
        assert metrics["mean"].value == pytest.approx(sum(r["score"] for r in records) / len(records))


def test_by_default_the_samples_are_the_episodes_aaos_bench_plays_by_default() -> None:
    """The same default number of seeds as `aaos bench --episodes`, so that the two report the same episodes."""
    default = build_parser().parse_args(["bench", "--env", "chief_of_staff"]).episodes
    tasks = [str(t["id"]) for t in aaos.list_tasks(env="chief_of_staff")]
    scenarios = [s["id"] for s in aaos.list_scenarios(env="chief_of_staff")]
    jobs = plan_jobs(["model"], tasks, scenarios, default, ("holdout",), "chief_of_staff")
    assert len(bench(env="chief_of_staff").dataset) == len(jobs)


def _bench_model(jobs: list[Job], mode: Mode, response_format: ResponseFormat, script: Script,
                 out: Path) -> dict[str, Any]:
    """`aaos bench`'s record of one episode with the fake endpoint (in `script`'s modes) as the model."""
    with serve(script) as url:
        config = LLMConfig("fake", url, mode=mode, response_format=response_format)
        [record] = _bench(jobs, PolicySpec("llm", "llm", config), out).values()
    return record


def _bodies(requests: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(request, sort_keys=True) for request in requests)


@pytest.fixture
def fake_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_API_KEY", "not-a-secret")


PER_ROLE_EPISODE = {"env": "org", "task": "org_simulation", "scenario": "vendor_outage_cascade"}


@pytest.fixture(scope="module")
def model_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[dict[str, Any]]]]:
    """One per-role episode with the fake endpoint as the model, JSON object answers (as llama.cpp takes them),
    through Inspect: its log folder and the requests the model got."""
    log_dir = tmp_path_factory.mktemp("model-log")
    script = Script()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FAKE_API_KEY", "not-a-secret")
        with serve(script) as url:
            _eval(bench(**PER_ROLE_EPISODE, episodes=1, response_format="json_object"), log_dir, FAKE_MODEL,
                  model_base_url=url)
    yield log_dir, script.requests


def _sample(log_dir: Path) -> EvalSample:
    [path] = log_dir.glob("*.eval")
    [sample] = read_eval_log(str(path)).samples or []
    return sample


def test_the_model_is_asked_what_aaos_bench_asks_it_with_the_same_result(
        model_run: tuple[Path, list[dict[str, Any]]], tmp_path: Path) -> None:
    """Each role's own view, the same request bodies as `aaos bench` sends, the same decisions and record."""
    log_dir, inspected = model_run
    benched = Script()
    jobs = plan_jobs(["llm"], [PER_ROLE_EPISODE["task"]], [PER_ROLE_EPISODE["scenario"]], 1, ("holdout",), "org")
    record = _bench_model(jobs, "per_role", "json_object", benched, tmp_path / "bench.jsonl")
    assert _bodies(inspected) == _bodies(benched.requests)
    assert len(inspected) == 6 * record["steps"]
    scored = _score(_sample(log_dir)).metadata
    assert {key: scored[key] for key in COMPARED} == {key: record[key] for key in COMPARED}
    assert scored["llm"]["decisions"] == record["llm"]["decisions"] == {"primary": len(inspected), "secondary": 0,
                                                                      "champion": 0}
    assert scored["not_credited"] is None


@pytest.mark.usefixtures("fake_key")
def test_an_invalid_answer_is_repaired_as_aaos_bench_repairs_it_and_a_schema_is_inspect_s_structured_output(
        tmp_path: Path) -> None:
    """Joint mode with a JSON schema: the first answer is not JSON, so both harnesses send the same repair turn;
    the schema goes through Inspect's structured output with its consts as one-value enums, nothing else changed."""
    episode = {"env": "chief_of_staff", "task": "steady_week", "scenario": "factory_recall"}
    through_inspect, through_bench = Script(modes=["not_json", "ok"]), Script(modes=["not_json", "ok"])
    with serve(through_inspect) as url:
        log = _eval(bench(**episode, episodes=1, mode="joint", response_format="json_schema"), tmp_path,
                    FAKE_MODEL, model_base_url=url)
    jobs = plan_jobs(["llm"], [episode["task"]], [episode["scenario"]], 1, ("holdout",), episode["env"])
    record = _bench_model(jobs, "joint", "json_schema", through_bench, tmp_path / "bench.jsonl")
    for request in through_bench.requests:
        schema = request["response_format"]["json_schema"]
        schema["schema"] = inspect_schema(schema["schema"])
    for request in through_inspect.requests:
        request["response_format"]["json_schema"].pop("description", None)
    assert _bodies(through_inspect.requests) == _bodies(through_bench.requests)
    assert through_inspect.requests[1]["messages"][-1]["content"].startswith("That answer was invalid")
    scored = _score((log.samples or [])[0]).metadata
    assert {key: scored[key] for key in COMPARED} == {key: record[key] for key in COMPARED}
    assert scored["llm"]["repairs"] == record["llm"]["repairs"] == 1


def test_a_json_schema_of_legal_actions_loses_nothing_in_inspect_s_terms() -> None:
    """What Inspect's JSONSchema carries of an action schema is the schema with consts as one-value enums."""
    from inspect_ai.util import JSONSchema
    from inspect_ai.util._json import json_schema_dump

    from aaos.agents.prompts import action_schema, joint_schema

    env = aaos.make("org_simulation", scenario="product_launch_failure", seed=0)
    views = env.reset()["agent_observations"]
    legal = {role: view["legal_actions"] for role, view in views.items()}
    for schema in (joint_schema(legal), *(action_schema(actions) for actions in legal.values())):
        converted = inspect_schema(schema)
        assert "const" not in json.dumps(converted)
        assert json_schema_dump(JSONSchema.model_validate(converted)) == converted


def test_each_role_s_view_and_answer_is_the_sample_s_conversation(
        model_run: tuple[Path, list[dict[str, Any]]]) -> None:
    sample = _sample(model_run[0])
    record = _score(sample).metadata
    conversation = sample.messages[1:]  # after the sample's input
    assert [message.role for message in conversation] == ["user", "assistant"] * record["llm"]["calls"]
    for role in aaos.spec("org").roles:
        assert sum(f"Your view as {role}:" in message.text for message in conversation) == record["steps"]
    for answer in conversation[1::2]:
        assert set(json.loads(answer.text)) == {"action_type", "payload"}
    assert sum(event.event == "model" for event in sample.events) == record["llm"]["calls"]


def test_inspect_view_serves_the_transcripts(model_run: tuple[Path, list[dict[str, Any]]]) -> None:
    port = free_port()
    viewer = subprocess.Popen([str(INSPECT), "view", "--log-dir", str(model_run[0]), "--host", "127.0.0.1",
                               "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        listing = _get_when_up(f"http://127.0.0.1:{port}/api/log-files", viewer)
        [name] = [entry["name"] for entry in listing["files"]]
        shown = _get_when_up(f"http://127.0.0.1:{port}/api/logs/{urllib.parse.quote(name, safe='')}", viewer)
    finally:
        viewer.terminate()
        viewer.wait(timeout=10)
    assert shown["eval"]["task_args"]["env"] == "org"
    [sample] = shown["samples"]
    assert any("Your view as engineer:" in str(message["content"]) for message in sample["messages"])


def _get_when_up(url: str, process: subprocess.Popen[bytes]) -> Any:
    for _ in range(300):
        assert process.poll() is None, "inspect view exited"
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError:
            raise
        except OSError:  # not up yet
            time.sleep(0.2)
    raise AssertionError(f"{url} did not answer")


def _log_text(log_dir: Path) -> str:
    """Everything Inspect wrote to the log folder, decompressed."""
    texts = []
    for path in log_dir.glob("*.eval"):
        with zipfile.ZipFile(path) as archive:
            texts.extend(archive.read(name).decode("utf-8", "replace") for name in archive.namelist())
    return "\n".join(texts)


@pytest.mark.parametrize("salt_env", [HOLDOUT_SALT_ENV, "MY_EVAL_SALT"])
def test_the_holdout_salt_is_applied_and_never_written(salt_env: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    salt = "sesame-7f3a"
    monkeypatch.delenv(HOLDOUT_SALT_ENV, raising=False)
    monkeypatch.setenv(salt_env, salt)
    log = _eval(bench(env="inbox", task="easy", episodes=1, policy="heuristic", salt_env=salt_env), tmp_path)
    assert log.eval.metadata is not None and log.eval.metadata["holdout_salt"] == salt_fingerprint(salt)
    records = _scores(log)
    assert {r["split_label"] for r in records.values()} == {"salted holdout"}
    assert {r["holdout_salt"] for r in records.values()} == {salt_fingerprint(salt)}
    assert salt not in _log_text(tmp_path)
    monkeypatch.setenv(HOLDOUT_SALT_ENV, salt)  # the benchmark's salt, for the same episodes
    jobs = plan_jobs(["heuristic"], ["easy"], [s["id"] for s in aaos.list_scenarios(env="inbox")], 1, ("holdout",),
                     "inbox")
    _same_episodes(records, _bench(jobs, baseline("heuristic"), tmp_path / "bench.jsonl"))


@pytest.mark.parametrize(("arguments", "says"), [
    ({"env": "orgs"}, "-T env='orgs' is not an environment; choose one of: org"),
    ({"task": "org_sim"}, "-T task='org_sim' is not one of: org_simulation, crisis_management, full_episode"),
    ({"scenario": ["resource_conflict", "moon_base"]}, "-T scenario: moon_base is neither a scenario of org"),
    ({"split": "test"}, "-T split='test' is not one of: train, holdout, both"),
    ({"episodes": 0}, "-T episodes=0: give the number of seeds per split, 1 or more"),
    ({"policy": "champion"}, "-T policy='champion' is not one of: noop, random, heuristic, oracle"),
    ({"mode": "solo"}, "-T mode='solo' is not one of: per_role, joint, compact"),
    ({"mode": "compact"}, "add -T response_format=json_object"),
    ({"salt_env": "NO_SUCH_SALT_VARIABLE"}, "-T salt_env=NO_SUCH_SALT_VARIABLE: that environment variable is not set"),
])
def test_bad_task_arguments_say_what_to_fix(arguments: dict[str, Any], says: str) -> None:
    with pytest.raises(ValueError) as raised:
        bench(**arguments)
    assert says in str(raised.value)


def test_without_inspect_the_extra_to_install_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [name for name in sys.modules if name.startswith("aaos.evals")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "inspect_ai", None)  # as on an install without the inspect extra
    with pytest.raises(DependencyNotInstalled, match=r"pip install 'aaos\[inspect\]'"):
        importlib.import_module("aaos.evals.inspect_tasks")


def test_inspect_eval_runs_the_task_file_and_the_installed_task(tmp_path: Path) -> None:
    """`inspect eval` from a checkout (the task file) and with aaos installed (the task by its registered name,
    through aaos's entry point)."""
    done = subprocess.run([str(INSPECT), "eval", TASK_FILE, "aaos/bench", "--model", "none", "-T", "env=chief_of_staff",
                           "-T", "task=steady_week", "-T", "scenario=factory_recall", "-T", "episodes=1",
                           "-T", "policy=heuristic", "--log-dir", str(tmp_path), "--display", "none"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if k != HOLDOUT_SALT_ENV})
    assert done.returncode == 0, done.stdout + done.stderr
    logs = [read_eval_log(str(path)) for path in tmp_path.glob("*.eval")]
    assert sorted(log.eval.task for log in logs) == ["aaos/bench", "bench"]
    jobs = plan_jobs(["heuristic"], ["steady_week"], ["factory_recall"], 1, ("holdout",), "chief_of_staff")
    benched = _bench(jobs, baseline("heuristic"), tmp_path / "bench.jsonl")
    for log in logs:
        _same_episodes(_scores(log), benched)


@pytest.mark.local_model
@pytest.mark.skipif(missing() is not None, reason=f"local model not installed: {missing()}")
def test_inspect_eval_on_the_local_model_scores_as_aaos_bench(tmp_path: Path) -> None:
    """The real SmolLM2 through its llama.cpp server: `inspect eval` (Inspect's llama-cpp-python provider) and `aaos
    bench --policy local-untrained`, each with a fresh server, play the same episode alike (in compact mode, the
    fewest prompt tokens, with the server's safe decoding)."""
    mode: Mode = "compact"
    episode = {"env": "chief_of_staff", "task": "steady_week", "scenario": "factory_recall", "mode": mode}
    server = LocalModelServer().start()
    config = server.config(mode)
    try:
        done = subprocess.run([str(INSPECT), "eval", TASK_FILE, "--model", f"llama-cpp-python/{MODEL_NAME}",
                               "--model-base-url", server.base_url, "--max-tokens", str(config.max_tokens),
                               "--max-retries", str(config.max_retries), "--timeout", str(int(config.timeout_s)),
                               *(f"-T{key}={value}" for key, value in episode.items()), "-T", "episodes=1",
                               "-T", f"response_format={config.response_format}", "-T", f"decoding={config.decoding}",
                               "--log-dir", str(tmp_path / "logs"), "--display", "none"],
                              cwd=REPO_ROOT, capture_output=True, text=True, timeout=1800)
    finally:
        server.stop()
    assert done.returncode == 0, done.stdout + done.stderr
    [path] = (tmp_path / "logs").glob("*.eval")
    [(_, inspected)] = _scores(read_eval_log(str(path))).items()
    done = subprocess.run([sys.executable, "-m", "aaos.cli", "bench", "--policy", "local-untrained",
                           *(f"--{key}={value}" for key, value in episode.items()), "--split", "holdout",
                           "--episodes", "1", "--out", str(tmp_path / "bench")],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout + done.stderr
    [benched] = [json.loads(line) for line in (tmp_path / "bench" / "results.jsonl").read_text().splitlines()]
    assert {key: inspected[key] for key in COMPARED} == {key: benched[key] for key in COMPARED}
    assert inspected["llm"]["decisions"] == benched["llm"]["decisions"]
    assert inspected["llm"]["decisions"]["primary"] > 0  # the model's own answers, not only fallbacks
