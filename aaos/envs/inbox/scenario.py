"""Scenario files (a company's support desk) and template banks (how its emails are worded), both under
`scenarios/inbox/`: loading with errors that name the file and field.

A scenario file gives the company, its products, its customers' domains and its key (VIP) accounts. The template
banks `templates/train.json` and `templates/holdout.json` give, per sender intent, plainly written and tricky
(ambiguous or misleading) subjects and bodies, plus names, junk domains and follow-up lines. Holdout episodes
(a holdout scenario, or a seed >= 10000) are written only from the holdout bank. A scenario may bring its own bank
(`templates`, the same schema), which then writes all its episodes: a private holdout scenario need not reuse the
public holdout wording.
"""

from __future__ import annotations

from functools import cache

from pydantic import BaseModel, ConfigDict, Field, model_validator

from aaos.core.scenario_files import ScenarioShelf, read_model
from aaos.core.spec import ScenarioInfo, Split
from aaos.envs.inbox.spec import INTENT_CATEGORY

Domain = Field(min_length=3, max_length=60, pattern=r"^[a-z0-9][a-z0-9.-]*\.[a-z]{2,}$")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


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
    templates: Bank | None = Field(default=None, description="The scenario's own template bank (the schema of "
                                   "scenarios/inbox/templates/*.json, its split the scenario's), used for every "
                                   "episode of the scenario; without it, the package's bank of the episode's split.")

    @model_validator(mode="after")
    def _vips_are_customers(self) -> Scenario:
        strangers = sorted(set(self.vip_accounts) - set(self.customer_domains))
        if strangers:
            raise ValueError(f"vip_accounts must be customer_domains; not customers: {strangers}")
        if len(self.vip_accounts) >= len(self.customer_domains):
            raise ValueError("some customer_domains must not be vip_accounts")
        if self.templates is not None and self.templates.split != self.split:
            raise ValueError(f"templates.split must be the scenario's split {self.split!r}")
        return self

    def info(self) -> ScenarioInfo:
        return ScenarioInfo(self.id, self.title, self.split, self.description)


SCENARIOS: ScenarioShelf[Scenario] = ScenarioShelf("inbox", Scenario)
TEMPLATE_DIR = SCENARIOS.folder / "templates"
load_scenario_file = SCENARIOS.load
resolve_scenario = SCENARIOS.resolve


def builtin_scenarios() -> dict[str, Scenario]:
    """The scenarios shipped in scenarios/inbox, by id: train ones first, then holdout, each by id."""
    return SCENARIOS.builtin


@cache
def bank(split: Split) -> Bank:
    found = read_model(TEMPLATE_DIR / f"{split}.json", Bank)
    if found.split != split:
        raise ValueError(f"{TEMPLATE_DIR / f'{split}.json'}: split must be {split!r}")
    return found
