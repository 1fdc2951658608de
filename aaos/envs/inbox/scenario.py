"""Scenario files (a company's support desk) and template banks (how its emails are worded), both under
`scenarios/inbox/`: loading with errors that name the file and field.

A scenario file gives the company, its products, its customers' domains and its key (VIP) accounts. The template
banks `templates/train.json` and `templates/holdout.json` give, per sender intent, plainly written and tricky
(ambiguous or misleading) subjects and bodies, plus names, junk domains and follow-up lines. Holdout episodes
(a holdout scenario, or a seed >= 10000) are written only from the holdout bank.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from aaos.core.spec import ScenarioInfo, Split
from aaos.data import data_dir
from aaos.envs.inbox.spec import INTENT_CATEGORY

SCENARIO_DIR = data_dir("scenarios") / "inbox"
TEMPLATE_DIR = SCENARIO_DIR / "templates"
Domain = Field(min_length=3, max_length=60, pattern=r"^[a-z0-9][a-z0-9.-]*\.[a-z]{2,}$")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Scenario(_Model):
    id: str = Field(min_length=1, max_length=60, pattern=r"^[a-z][a-z0-9_]*$")
    title: str = Field(min_length=1, max_length=120)
    split: Split
    description: str = Field(default="", max_length=500)
    company: str = Field(min_length=1, max_length=60)
    domain: str = Domain
    slug: str = Field(min_length=2, max_length=20, pattern=r"^[a-z]+$",
                      description="The short name phishing domains imitate (e.g. nimbus -> nimbus-billing.com).")
    products: list[str] = Field(min_length=1)
    customer_domains: list[str] = Field(min_length=3)
    vip_accounts: list[str] = Field(min_length=1, description="Key accounts: customer domains whose mail is one "
                                                              "priority level more pressing.")
    free_mail_domains: list[str] = Field(min_length=1)

    @model_validator(mode="after")
    def _vips_are_customers(self) -> Scenario:
        strangers = sorted(set(self.vip_accounts) - set(self.customer_domains))
        if strangers:
            raise ValueError(f"vip_accounts must be customer_domains; not customers: {strangers}")
        if len(self.vip_accounts) >= len(self.customer_domains):
            raise ValueError("some customer_domains must not be vip_accounts")
        return self

    def info(self) -> ScenarioInfo:
        return ScenarioInfo(self.id, self.title, self.split, self.description)


class Template(_Model):
    subject: str = Field(min_length=1, max_length=120)
    body: str = Field(min_length=1, max_length=600)


class IntentTemplates(_Model):
    plain: list[Template] = Field(min_length=1)
    tricky: list[Template] = Field(default_factory=list)


class Bank(_Model):
    split: Split
    first_names: list[str] = Field(min_length=4)
    last_names: list[str] = Field(min_length=4)
    junk_domains: list[str] = Field(min_length=1)
    phish_suffixes: list[str] = Field(min_length=1)
    followups: list[str] = Field(min_length=2)
    intents: dict[str, IntentTemplates]

    @model_validator(mode="after")
    def _every_intent(self) -> Bank:
        if set(self.intents) != set(INTENT_CATEGORY):
            raise ValueError(f"intents must be exactly {sorted(INTENT_CATEGORY)}; missing "
                             f"{sorted(set(INTENT_CATEGORY) - set(self.intents))}, unknown "
                             f"{sorted(set(self.intents) - set(INTENT_CATEGORY))}")
        return self


def _read(path: Path, model: type[_Model]) -> _Model:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ValueError(f"{path}: cannot read ({error.strerror})") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not valid JSON ({error.msg} at line {error.lineno})") from None
    try:
        return model.model_validate(data)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'file'}: {e['msg']}"
                             for e in error.errors()[:5])
        raise ValueError(f"{path}: {problems}") from None


def load_scenario_file(path: str | Path) -> Scenario:
    """A scenario file, validated (ValueError naming the file and each field that is wrong)."""
    found = _read(Path(path), Scenario)
    assert isinstance(found, Scenario)
    return found


@cache
def builtin_scenarios() -> dict[str, Scenario]:
    return {s.id: s for s in (load_scenario_file(p) for p in sorted(SCENARIO_DIR.glob("*.json")))}


def resolve_scenario(name: str) -> Scenario:
    """A built-in scenario by id, or a scenario file by path (ending in .json)."""
    if name.endswith(".json"):
        return load_scenario_file(name)
    scenarios = builtin_scenarios()
    if name not in scenarios:
        raise ValueError(f"unknown scenario {name!r}; choose one of: {', '.join(scenarios)} or a path to a .json file")
    return scenarios[name]


@cache
def bank(split: Split) -> Bank:
    found = _read(TEMPLATE_DIR / f"{split}.json", Bank)
    assert isinstance(found, Bank)
    if found.split != split:
        raise ValueError(f"{TEMPLATE_DIR / f'{split}.json'}: split must be {split!r}")
    return found
