"""The Support Inbox's rules (issue 12, items 1-3): registration through the generic layers, the data generator and
its truth rules, labels graded only at close, final closes, hidden emails, violations, the done rule, the wire
models, the renderers and the scenario files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import aaos
from aaos.core.info import info_problems, observation_problems
from aaos.core.policy import action
from aaos.core.seeding import HOLDOUT_SALT_ENV
from aaos.envs.inbox.champion import guess_intent
from aaos.envs.inbox.env import InboxEnv
from aaos.envs.inbox.graders import Agreement
from aaos.envs.inbox.guardrails import guardrail
from aaos.envs.inbox.kit import KIT, hidden_ids
from aaos.envs.inbox.models import InboxObservation, InboxState
from aaos.envs.inbox.scenario import bank, load_scenario_file
from aaos.envs.inbox.spec import ROLE, TASKS_BY_ID, VIOLATIONS
from aaos.envs.inbox.world import Email, truth

ENV = "inbox"


def make(task: str = "medium", scenario: str = "saas_helpdesk", seed: int = 0) -> InboxEnv:
    env = aaos.make(task, scenario=scenario, seed=seed, env=ENV)
    assert isinstance(env, InboxEnv)
    env.reset()
    return env


def act(env: InboxEnv, kind: str, **payload: Any) -> Any:
    return env.step({ROLE: action(kind, **payload)})


def first(env: InboxEnv, **wanted: Any) -> Email:
    return next(e for e in env.visible() if not e.closed and all(getattr(e, k) == v for k, v in wanted.items()))


def close_right(env: InboxEnv, email: Email, priority: str | None = None) -> Any:
    act(env, "classify_email", email_id=email.id, category=email.true_category)
    act(env, "set_priority", email_id=email.id, level=priority or email.true_priority)
    kind = {"resolved": "mark_resolved", "escalated": "escalate_email", "ignored": "ignore_email"}[email.true_outcome]
    return act(env, kind, email_id=email.id)


def test_the_inbox_runs_through_the_generic_layers() -> None:
    assert "inbox" in aaos.env_ids()
    spec = aaos.spec(ENV)
    assert spec.roles == (ROLE,)
    assert {t["id"]: (t["max_steps"]) for t in aaos.list_tasks(env=ENV)} == {"easy": 50, "medium": 120, "hard": 300}
    assert {a.name for a in spec.actions} == {"classify_email", "set_priority", "mark_resolved", "escalate_email",
                                              "ignore_email", "open_email", "no_op"}
    assert {s["split"] for s in aaos.list_scenarios(env=ENV)} == {"train", "holdout"}
    env = aaos.make(env=ENV)
    assert (env.task, env.scenario) == (spec.default_task, spec.default_scenario)  # type: ignore[attr-defined]
    for name in aaos.policies.names():
        policy = aaos.policies.make(name, env=ENV)
        policy.bind(env)
        assert policy.act(env.reset()).keys() == {ROLE}


@pytest.mark.parametrize("task", ["easy", "medium", "hard"])
def test_a_task_draws_its_emails_in_waves(task: str) -> None:
    definition = TASKS_BY_ID[task]
    for seed in (0, 1, 10_000):
        env = make(task, seed=seed)
        assert len(env.emails) == definition.emails
        assert {e.arrives for e in env.emails} == set(definition.waves)
        junk = sum(e.true_category in ("spam", "phishing") for e in env.emails)
        assert junk == round(definition.junk_share * definition.emails)
        assert len({e.id for e in env.emails}) == definition.emails


def test_every_draw_is_fair() -> None:
    """At least one urgent email in the first wave, and the escalation budget covers every right escalation."""
    for task, definition in TASKS_BY_ID.items():
        for seed in [*range(15), *range(10_000, 10_015)]:
            env = make(task, seed=seed)
            assert any(e.urgent for e in env.emails if e.arrives == definition.waves[0])
            assert sum(e.true_outcome == "escalated" for e in env.emails) <= definition.escalation_budget


@pytest.mark.parametrize(("facts", "expected"), [
    (("outage", False, None, None, 0), ("technical", "high", "escalated")),
    (("refund_request", False, 200, None, 0), ("billing", "medium", "resolved")),
    (("refund_request", False, 600, None, 0), ("billing", "medium", "escalated")),
    (("refund_request", False, 1200, None, 0), ("billing", "high", "escalated")),
    (("how_to", True, None, None, 0), ("technical", "medium", "resolved")),
    (("how_to", True, None, None, 2), ("technical", "high", "resolved")),
    (("how_to", False, None, None, 1), ("technical", "low", "resolved")),
    (("upgrade_request", False, None, 50, 0), ("sales", "medium", "escalated")),
    (("upgrade_request", False, None, 45, 0), ("sales", "low", "resolved")),
    (("complaint", True, None, None, 0), ("feedback", "high", "escalated")),
    (("complaint", False, None, None, 0), ("feedback", "medium", "resolved")),
    (("data_deletion", False, None, None, 0), ("account", "medium", "escalated")),
    (("promo", False, None, None, 2), ("spam", "low", "ignored")),
    (("invoice_phish", True, 900, None, 0), ("phishing", "low", "ignored")),
])
def test_the_truth_comes_from_the_facts(facts: tuple[Any, ...], expected: tuple[str, str, str]) -> None:
    assert truth(*facts) == expected


def test_the_same_seed_gives_the_same_inbox_and_seeds_differ() -> None:
    assert make(seed=4).state() == make(seed=4).state()
    assert make(seed=4).state()["emails"] != make(seed=5).state()["emails"]


def test_the_salt_redraws_holdout_episodes_only(monkeypatch: pytest.MonkeyPatch) -> None:
    plain = {seed: make(seed=seed).state()["emails"] for seed in (3, 10_003)}
    monkeypatch.setenv(HOLDOUT_SALT_ENV, "a-secret")
    assert make(seed=3).state()["emails"] == plain[3]
    assert make(seed=10_003).state()["emails"] != plain[10_003]


@pytest.mark.parametrize("split", ["train", "holdout"])
def test_plainly_written_emails_say_what_they_want(split: str) -> None:
    """A plain template is one the keyword champion reads right, whatever fills it (a key account or not, small or
    large amounts and deals, chased or not); the other templates are tricky ones and belong under `tricky`. Train
    and holdout banks never share a wording."""
    shipped = bank(split)
    other = {t.subject for i in bank("holdout" if split == "train" else "train").intents.values()
             for t in (*i.plain, *i.tricky)}
    values = {"first": "Ana", "company": "Acme", "product": "Acme Drive", "order": "#12345", "link": "https://x.io/a"}
    for intent, templates in shipped.intents.items():
        for template in templates.plain:
            assert template.subject not in other
            for amount, seats, vip, chased in ((90, 10, False, 0), (1500, 60, True, 2)):
                filled = {**values, "amount": f"${amount:,}", "seats": str(seats)}
                text = " ".join(part.format(**filled) for part in (template.subject, template.body))
                money = amount if "{amount}" in template.body else None
                deal = seats if "{seats}" in template.body else None
                assert truth(guess_intent(text), vip, money, deal, chased) == truth(intent, vip, money, deal, chased), \
                    (intent, text)


def test_holdout_episodes_are_written_from_the_holdout_bank_only() -> None:
    train_names, holdout_names = set(bank("train").first_names), set(bank("holdout").first_names)
    assert not train_names & holdout_names
    for scenario, seed, names in (("saas_helpdesk", 1, train_names), ("saas_helpdesk", 10_001, holdout_names),
                                  ("retail_helpdesk", 1, holdout_names)):
        customers = [e for e in make("hard", scenario, seed).emails if e.true_category not in ("spam", "phishing")]
        assert {e.sender.split()[0] for e in customers} <= names


def test_labels_are_free_and_graded_only_when_the_email_closes() -> None:
    env = make("easy")
    email = first(env)
    wrong = next(c for c in ("billing", "technical") if c != email.true_category)
    for category in (wrong, email.true_category, wrong, email.true_category):
        result = act(env, "classify_email", email_id=email.id, category=category)
        assert (result.reward, result.info["score"]) == (0.0, 0.0)
    again = act(env, "classify_email", email_id=email.id, category=email.true_category)
    assert again.info["action_results"][ROLE]["status"] == "no_effect"
    act(env, "set_priority", email_id=email.id, level=email.true_priority)
    closed = act(env, {"resolved": "mark_resolved", "escalated": "escalate_email",
                       "ignored": "ignore_email"}[email.true_outcome], email_id=email.id)
    components = closed.info["reward_breakdown"]["components"]  # one email closed, labelled right: kappa 1
    assert components["classification"] == components["priority"] == components["resolution"] == 1 / len(env.emails)
    assert closed.info["score"] > 0


def test_labels_are_graded_by_agreement_above_chance() -> None:
    """Cohen's kappa over the closed emails, times the share closed: chance agreement earns nothing, a perfect
    labelling earns everything, and a hand-worked case is exact."""
    true = ["billing", "billing", "technical", "spam"]
    constant, perfect, some = Agreement(), Agreement(), Agreement()
    for label, given in zip(true, ["billing", "technical", "technical", None], strict=True):
        constant.add("billing", label)
        perfect.add(label, label)
        some.add(given, label)
    assert constant.kappa(4) == 0.0  # p_o = 2/4 = p_e: what one label for every email agrees by chance
    assert perfect.kappa(4) == 1.0
    # p_o = 2/4; p_e = (2*1 + 1*2 + 1*0) / 16 = 1/4 (true billing 2, technical 1, spam 1; given billing 1,
    # technical 2, none 1): kappa = (1/2 - 1/4) / (1 - 1/4) = 1/3
    assert some.kappa(4) == pytest.approx(1 / 3)
    one = Agreement()
    one.add("spam", "spam")
    assert one.kappa(1) == 1.0  # one true label, given to every closed email: p_e = 1, agreement is perfect
    assert Agreement().kappa(0) == 0.0


def test_one_label_for_every_email_scores_nothing() -> None:
    """Every email classified billing, set low and resolved: plain agreement paid for it (about 0.39 on easy);
    graded above chance, its labels and closings earn 0."""
    env = make("easy")
    for email in list(env.visible()):
        act(env, "classify_email", email_id=email.id, category="billing")
        act(env, "set_priority", email_id=email.id, level="low")
        act(env, "mark_resolved", email_id=email.id)
    components = env.state()["components"]
    assert (components["classification"], components["priority"], components["resolution"]) == (0.0, 0.0, 0.0)


def test_a_closed_email_is_final_and_touching_it_is_a_violation() -> None:
    env = make("easy")
    email = first(env)
    act(env, "mark_resolved", email_id=email.id)
    assert email.id not in env.legal_actions(ROLE)["classify_email"]["email_id"]
    assert env.check({ROLE: action("set_priority", email_id=email.id, level="high")})
    before = env.state()["emails"]
    result = act(env, "set_priority", email_id=email.id, level="high")
    record = result.info["action_results"][ROLE]
    assert (record["status"], record["reason"]) == ("rejected", "precondition")
    assert [v["rule"] for v in result.info["oversight_events"]] == ["relabel_after_close"]
    assert env.state()["emails"] == before


def test_a_closed_email_leaves_the_view_for_its_outcome_and_stays_in_the_observation() -> None:
    env = make("easy")
    kept, ignored = first(env), next(e for e in env.visible()[1:] if not e.closed)
    act(env, "classify_email", email_id=kept.id, category="billing")
    observation = act(env, "ignore_email", email_id=ignored.id).observation
    view = observation["agent_observations"][ROLE]
    assert view["closed_emails"] == {ignored.id: "ignored"}
    assert ignored.id not in {row["id"] for row in view["inbox"]}
    assert all(row["status"] == "open" for row in view["inbox"])
    assert next(row for row in view["inbox"] if row["id"] == kept.id)["category"] == "billing"
    rows = {row["id"]: row for row in observation["inbox"]}  # the inbox as a whole: every arrived email
    assert set(rows) == {e.id for e in env.visible()} and rows[ignored.id]["status"] == "ignored"
    assert (view["pending_count"], view["resolved_count"]) == (len(view["inbox"]), len(view["closed_emails"]))


def test_an_email_not_yet_arrived_is_never_shown_nor_told_apart_from_a_made_up_id() -> None:
    env = make("hard")
    hidden = hidden_ids(env)
    assert hidden and hidden == {e.id for e in env.emails if e.arrives > 0}
    text = json.dumps(env.observation())
    assert not any(email_id in text for email_id in hidden)
    secret = sorted(hidden)[0]
    records = [act(env, "open_email", email_id=i).info["action_results"][ROLE] for i in (secret, "em_zzzzzz")]
    assert records[0]["message"].replace(secret, "ID") == records[1]["message"].replace("em_zzzzzz", "ID")
    assert [r["reason"] for r in records] == ["unknown_id", "unknown_id"]


def test_violations_carry_their_severity_and_shrink_the_score() -> None:
    env = make("hard", seed=2)
    phishing = first(env, true_category="phishing")
    urgent = first(env, true_priority="high")
    events = [*act(env, "mark_resolved", email_id=phishing.id).info["oversight_events"],
              *act(env, "ignore_email", email_id=urgent.id).info["oversight_events"]]
    assert [(v["rule"], v["severity"]) for v in events] == [("resolved_phishing", "critical"),
                                                            ("ignored_urgent", "high")]
    while env.step_count < env.last_wave:  # every email in: enough to escalate past the budget
        act(env, "no_op")
    over = []
    for _ in range(env.escalation_budget + 1):
        over += act(env, "escalate_email", email_id=env.pending()[0]).info["oversight_events"]
    assert [v["rule"] for v in over] == ["escalation_over_budget"]
    assert env.penalty == pytest.approx(sum(VIOLATIONS[r][1] for r in (
        "resolved_phishing", "ignored_urgent", "escalation_over_budget")))
    assert env.observation()["agent_observations"][ROLE]["escalations_left"] == 0


@pytest.mark.parametrize("task", ["easy", "medium", "hard"])
def test_urgent_handling_moves_only_when_an_email_closes_not_when_a_wave_arrives(task: str) -> None:
    """Reward version 1 counted an urgent email from its arrival, so the component fell when a wave brought
    urgent emails and told the agent how many of the wave were urgent. Here the champion plays until it has
    handled an urgent email, then waits while the later waves arrive: the component must not move."""
    for scenario, seed in (("saas_helpdesk", 0), ("saas_helpdesk", 10_000)):
        env = make(task, scenario, seed)
        champion = aaos.policies.make("heuristic", env=ENV)
        observation, handled = env.observation(), None
        while not env.done:
            waiting = handled is not None
            result = env.step({ROLE: action("no_op")} if waiting else champion.act(observation))
            observation = result.observation
            now = result.info["reward_breakdown"]["components"]["urgent_handling"]
            if waiting:
                assert now == handled, (scenario, seed, env.step_count, result.info["scenario_events"])
            elif now:
                handled = now
        assert handled, "the champion never handled an urgent email: nothing was tested"


def test_urgent_emails_count_only_when_labelled_high_and_closed_right_before_half_time() -> None:
    early, late, unlabelled = make("easy"), make("easy"), make("easy")
    for env, wait, priority in ((early, 0, None), (late, 25, None), (unlabelled, 0, "medium")):
        for _ in range(wait):
            act(env, "no_op")
        result = close_right(env, first(env, true_priority="high"), priority)
    assert early.components["urgent_handling"] > 0
    assert late.components["urgent_handling"] == 0 == unlabelled.components["urgent_handling"]
    assert result.info["reward_breakdown"]["components"]["urgent_handling"] == 0


def test_the_episode_ends_when_every_email_has_arrived_and_is_closed() -> None:
    env = make("medium")
    while env.pending():
        act(env, "ignore_email", email_id=env.pending()[0])
    assert not env.done and env.step_count < env.last_wave
    while not env.done:
        act(env, "ignore_email", email_id=env.pending()[0]) if env.pending() else act(env, "no_op")
    assert env.step_count < env.max_steps
    assert all(e.closed for e in env.emails)
    with pytest.raises(aaos.EpisodeDone):
        act(env, "no_op")


def test_the_oracle_scores_one_and_an_untouched_inbox_zero() -> None:
    for task in TASKS_BY_ID:
        env = make(task, seed=7)
        oracle = aaos.policies.make("oracle", env=ENV)
        oracle.bind(env)
        observation = env.observation()
        while not env.done:
            observation = env.step(oracle.act(observation)).observation
        assert env.score == 1.0
        idle = make(task, seed=7)
        while not idle.done:
            act(idle, "no_op")
        assert idle.score == 0.0 and idle.step_count == idle.max_steps


def test_every_step_honours_the_contracts_and_the_wire_models() -> None:
    env = make("medium", seed=1)
    policy = aaos.policies.make("random", seed=1, env=ENV)
    observation = env.observation()
    while not env.done:
        InboxObservation.model_validate(observation)
        assert not observation_problems(observation, env.spec)
        result = env.step(policy.act(observation))
        assert not info_problems(result.info, env.spec)
        breakdown = result.info["reward_breakdown"]
        assert result.reward == pytest.approx(breakdown["immediate"] + breakdown["delayed"], abs=1e-12)
        observation = result.observation
    InboxState.model_validate(env.state())
    json.dumps(env.state())


def test_the_grade_report_shows_outcomes_confusion_missed_urgent_and_violations() -> None:
    env = make("medium")  # emails arrive in waves: one still to come carries hostile text below
    urgent = first(env, true_priority="high")
    act(env, "classify_email", email_id=urgent.id, category="spam")
    act(env, "ignore_email", email_id=urgent.id)
    report = KIT.rendering.report(env.state())
    for part in ("Outcome", "Categories", "Missed urgent emails", "ignored_urgent", urgent.id):  # the components:
        # the page's "How the score adds up" (aaos.ui.formatting.score_arithmetic) above this body
        assert part in report
    late = next(e for e in env.emails if e.arrives > env.step_count)
    late.subject = "<script>alert(1)</script>"
    while late.arrives > env.step_count:
        env.step({})
    view = env.observation()["agent_observations"][ROLE]
    for html in (KIT.rendering.role_card(ROLE, view, None), KIT.rendering.world(env.observation()),
                 KIT.rendering.report(env.state())):
        assert "<script>" not in html and "&lt;script&gt;" in html


def test_the_guardrail_stops_unlabelled_and_unread_closes() -> None:
    env = make("easy")
    email = first(env)
    view = lambda: env.observation()["agent_observations"][ROLE]  # noqa: E731
    close = action("mark_resolved", email_id=email.id)
    assert guardrail(ROLE, close, view()) == "unlabelled_close"
    act(env, "classify_email", email_id=email.id, category="billing")
    act(env, "set_priority", email_id=email.id, level="low")
    assert guardrail(ROLE, close, view()) == "unread_close"
    act(env, "open_email", email_id=email.id)
    assert guardrail(ROLE, close, view()) is None


def test_the_guardrail_stops_a_second_label_and_reopening_the_open_email() -> None:
    """A label already set and the email already open are steps that change nothing: a small model repeating one
    (it loops on the state it leaves unchanged) is refused them under guardrail decoding."""
    env = make("easy")
    view = lambda: env.observation()["agent_observations"][ROLE]  # noqa: E731
    email, other = (e["id"] for e in view()["inbox"][:2])
    for kind, field, value in (("classify_email", "category", "billing"), ("set_priority", "level", "low")):
        label = action(kind, email_id=email, **{field: value})
        assert guardrail(ROLE, label, view()) is None
        act(env, kind, email_id=email, **{field: value})
        assert guardrail(ROLE, label, view()) == "already_labelled"
        assert guardrail(ROLE, action(kind, email_id=other, **{field: value}), view()) is None
    act(env, "open_email", email_id=email)
    assert guardrail(ROLE, action("open_email", email_id=email), view()) == "already_open"
    assert guardrail(ROLE, action("open_email", email_id=other), view()) is None


def test_scenario_files_load_and_say_what_is_wrong(tmp_path: Path) -> None:
    shipped = Path(aaos.envs.inbox.scenario.SCENARIOS.folder) / "saas_helpdesk.json"
    assert KIT.scenario_file is not None and KIT.scenario_file(str(shipped)).id == "saas_helpdesk"
    data = json.loads(shipped.read_text())
    data["vip_accounts"] = ["stranger.com"]
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"broken\.json: .*not customers"):
        load_scenario_file(broken)
    data = json.loads(shipped.read_text()) | {"id": "my_desk", "split": "holdout"}
    custom = tmp_path / "custom.json"
    custom.write_text(json.dumps(data))
    env = aaos.make("easy", scenario=str(custom), seed=1, env=ENV)
    assert env.state()["split"] == "holdout"
