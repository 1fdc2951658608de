"""Users' own scenarios (issue 34, item 13), as a benchmark owner writes them: every worked example in
docs/scenarios.md validates (the environment read from the file), plays a whole episode with the champion and
shows its own id, never its path; a file of another environment says which to pass; a file may not take a
built-in's id; an inbox scenario brings its own template bank; the docs name every field of every schema."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import aaos
from aaos.cli import main
from aaos.core.scenario_files import ScenarioError, SchemaMismatch
from aaos.envs.chief_of_staff.scenario import Scenario as CosScenario
from aaos.envs.inbox.scenario import Bank, bank
from aaos.envs.inbox.scenario import Scenario as InboxScenario
from aaos.envs.org.scenario import Scenario as OrgScenario
from aaos.envs.org.spec import AMOUNT_CHOICES, RESOLVERS, VISIBLE_METRICS

REPO = Path(__file__).resolve().parent.parent
GUIDE = (REPO / "docs" / "scenarios.md").read_text(encoding="utf-8")
PROSE = " ".join(GUIDE.split())
"""The guide with its line breaks as spaces (a rule may wrap)."""
HARDEST = {"org": "full_episode", "chief_of_staff": "crunch_month", "inbox": "hard"}


def examples() -> list[dict[str, Any]]:
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)\n```", GUIDE, flags=re.DOTALL)]


@pytest.fixture
def written(tmp_path: Path) -> dict[str, Path]:
    """The guide's worked examples as files, by environment (read from the validate output)."""
    paths = []
    for example in examples():
        path = tmp_path / f"{example['id']}.json"
        path.write_text(json.dumps(example), encoding="utf-8")
        paths.append(path)
    return {env: path for path in paths for env in aaos.envs.scenario_envs(str(path))}


def test_every_worked_example_validates_as_its_environment_s(written: dict[str, Path],
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert sorted(written) == ["chief_of_staff", "inbox", "org"]  # one example per environment, each one's only
    assert main(["validate", *map(str, written.values())]) == 0
    lines = capsys.readouterr().out.splitlines()
    for env, path in written.items():
        scenario_id = json.loads(path.read_text())["id"]
        assert f"ok   {path} (env {env}: {scenario_id}, holdout: " in "\n".join(lines)


@pytest.mark.parametrize("env", ["org", "chief_of_staff", "inbox"])
def test_a_worked_example_plays_with_the_champion_and_shows_its_id_not_its_path(written: dict[str, Path],
                                                                               env: str) -> None:
    path = written[env]
    scenario_id = json.loads(path.read_text())["id"]
    made = aaos.make(HARDEST[env], scenario=str(path), seed=3, env=env)
    observation = made.reset()
    champion = aaos.policies.make("heuristic", env=env)
    champion.reset(3)
    champion.bind(made)
    while True:
        assert observation["scenario_id"] == scenario_id and str(path) not in json.dumps(observation)
        result = made.step(champion.act(observation))
        observation = result.observation
        if result.done:
            break
    assert 0.0 <= result.info["score"] <= 1.0 and made.state()["split" if env == "inbox" else "step"] is not None


def test_an_inbox_scenario_writes_its_emails_from_its_own_templates(written: dict[str, Path]) -> None:
    own = json.loads(written["inbox"].read_text())["templates"]
    wordings = [re.compile(re.sub(r"\\\{\w+\\\}", ".*", re.escape(template["subject"])) + "$")
                for intent in own["intents"].values() for template in intent["plain"]]
    made = aaos.make("hard", scenario=str(written["inbox"]), seed=10_001, env="inbox")
    made.reset()
    emails = made.state()["emails"]
    assert len(emails) == 50
    for email in emails:  # every subject is one of the scenario's own templates, filled in
        assert any(w.match(email["subject"].removeprefix("Re: ")) for w in wordings), email["subject"]
    assert {email["sender"].split()[0] for email in emails} & set(own["first_names"])
    public = {t.subject for intent in bank("holdout").intents.values() for t in (*intent.plain, *intent.tricky)}
    assert not public & {email["subject"] for email in emails}


def test_an_inbox_scenario_s_templates_keep_its_split(written: dict[str, Path], tmp_path: Path) -> None:
    data = json.loads(written["inbox"].read_text())
    data["templates"]["split"] = "train"
    path = tmp_path / "other_split.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ScenarioError, match=r"templates\.split must be the scenario's split 'holdout'"):
        aaos.make("easy", scenario=str(path), env="inbox")


def test_a_file_of_another_environment_says_which_to_pass(written: dict[str, Path],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SchemaMismatch, match=r"a scenario of environment 'inbox', not of 'org': pass env='inbox'"):
        aaos.make(scenario=str(written["inbox"]))  # org, the default environment
    assert main(["validate", "--env", "chief_of_staff", str(written["org"])]) == 1
    out = capsys.readouterr().out
    assert "a scenario of environment 'org', not of 'chief_of_staff': pass env='org'" in out


def test_a_file_matching_no_schema_is_shown_as_the_closest_environment_s(
        written: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(written["chief_of_staff"].read_text())
    del data["title"]
    path = tmp_path / "untitled.json"
    path.write_text(json.dumps(data))
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert "not a valid scenario of any environment; validated as 'chief_of_staff', the closest (1 problem" in out
    assert f"{path}: title: Field required" in out


def test_a_file_may_not_take_a_built_in_id_unless_it_is_that_scenario(tmp_path: Path) -> None:
    built_in = REPO / "scenarios" / "chief_of_staff" / "factory_recall.json"
    same = tmp_path / "same.json"
    same.write_text(built_in.read_text())
    assert aaos.make(scenario=str(same), env="chief_of_staff").reset()["scenario_id"] == "factory_recall"
    changed = json.loads(built_in.read_text())
    changed["title"] = "My own recall"
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(changed))
    with pytest.raises(ScenarioError, match="'factory_recall' is the id of a built-in chief_of_staff scenario"):
        aaos.make(scenario=str(path), env="chief_of_staff")


def _fields(model: type[BaseModel]) -> Iterator[str]:
    for name, field in model.model_fields.items():
        yield name
        for inner in (field.annotation, *getattr(field.annotation, "__args__", ())):
            for nested in (inner, *getattr(inner, "__args__", ())):
                if isinstance(nested, type) and issubclass(nested, BaseModel):
                    yield from _fields(nested)


@pytest.mark.parametrize("model", [OrgScenario, CosScenario, InboxScenario, Bank],
                         ids=["org", "chief_of_staff", "inbox", "bank"])
def test_the_docs_name_every_field_of_every_schema(model: type[BaseModel]) -> None:
    missing = sorted({name for name in _fields(model) if f"`{name}`" not in GUIDE and f"`{name}[]`" not in GUIDE})
    assert not missing, f"fields the authoring docs do not name: {missing}"


def test_the_docs_state_the_org_rules_as_the_code_has_them() -> None:
    assert ", ".join(map(str, AMOUNT_CHOICES)) in PROSE
    assert all(f"`{role}`" in PROSE for role in RESOLVERS) and "the three roles that resolve incidents" in PROSE
    for role, metrics in VISIBLE_METRICS.items():
        if role != "oversight":
            shown = "all four" if len(metrics) == 4 else ", ".join(metrics)
            assert f"{role}: {shown}" in PROSE, role
