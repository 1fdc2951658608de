"""The end-of-episode report's arithmetic (issue 33): for 30 episodes across the three environments (varied tasks,
scenarios, seeds, and the champion, random and noop policies), the numbers the report shows give the episode's
score when recomputed: each component's weight times its value, their sum over the weights, the penalty, the score.
The report is rendered as the Space renders it after a step (aaos.ui.episode.render).
"""

from __future__ import annotations

import itertools
import re

import pytest
from ui_fixtures import html_table

import aaos
from aaos.core.html import humanize
from aaos.core.trajectory import EpisodeMeta
from aaos.ui import agents, episode
from aaos.ui.session import Session

ENVS = ("org", "inbox", "chief_of_staff")
POLICIES = ("heuristic", "random", "noop")
EPISODES_PER_ENV = 10
FORMULA = re.compile(r"weighted mean = ([\d.]+) / ([\d.]+) = ([\d.]+); penalty = ([\d.]+); "
                     r"score = ([\d.]+) / \(1 \+ ([\d.]+)\) = ([\d.]+)")
ROUNDING = 5e-4
"""The report shows values to 4 decimals and the score to 3: a recomputed score is within this of the true one."""


def episodes() -> list[tuple[EpisodeMeta, str]]:
    """EPISODES_PER_ENV episodes of each environment, cycling through its tasks, its scenarios (train and
    holdout, with a seed of their split) and the policies."""
    chosen = []
    for env_id in ENVS:
        spec = aaos.spec(env_id)
        tasks = itertools.cycle(t.id for t in spec.tasks)
        scenarios = itertools.cycle(s for s in spec.scenarios)
        for index in range(EPISODES_PER_ENV):
            policy = POLICIES[(index + index // len(POLICIES)) % len(POLICIES)]  # not always with the same task
            scenario = next(scenarios)
            seed = index + (10_000 if scenario.split == "holdout" else 0)
            chosen.append((EpisodeMeta(env_id, next(tasks), scenario.id, seed), policy))
    return chosen


def play_to_the_end(meta: EpisodeMeta, policy_name: str) -> Session:
    session = Session(meta)
    policy = agents.build(policy_name, meta.seed, meta.env, None)
    policy.reset(meta.seed)
    while not session.done:
        session.step(policy.act(session.observation), agents.label(policy_name))
    return session


def number(text: str) -> float:
    return float(text.replace(",", ""))


@pytest.mark.parametrize(("meta", "policy"), episodes(), ids=lambda v: v if isinstance(v, str) else
                         f"{v.env}-{v.task}-{v.scenario}-{v.seed}")
def test_the_reports_arithmetic_gives_the_episodes_score(meta: EpisodeMeta, policy: str) -> None:
    session = play_to_the_end(meta, policy)
    score = session.score
    assert score is not None
    report = episode.render(session, "")["report"]["value"]
    arithmetic = report.split('<div class="aaos-arithmetic"', 1)[1]
    rows = html_table(arithmetic.split('<p class="aaos-formula">', 1)[0])
    weights = {humanize(c.name): c.weight for c in session.env.spec.reward_components}
    for row in rows:  # each component's weight is the environment's, and weighted = weight x value
        assert number(row["Weight"]) == pytest.approx(weights[row["Component"]])
        assert number(row["Weighted"]) == pytest.approx(number(row["Weight"]) * number(row["Value"]), abs=1e-4)
    plain = re.sub(r"<[^>]+>", "", arithmetic)
    found = FORMULA.search(plain)
    assert found, plain
    total, weight_sum, mean, penalty, mean_again, penalty_again, shown = map(float, found.groups())
    assert (mean_again, penalty_again) == (mean, penalty)
    assert total == pytest.approx(sum(number(row["Weighted"]) for row in rows), abs=len(rows) * 1e-4)
    assert weight_sum == pytest.approx(sum(number(row["Weight"]) for row in rows))
    assert mean == pytest.approx(total / weight_sum, abs=1e-4)
    recomputed = min(1.0, max(0.0, mean / (1 + penalty)))
    assert abs(recomputed - score) <= ROUNDING, (recomputed, score)
    assert shown == round(score, 3) and f"{score:.3f}" in report.split("</h3>", 1)[0]


def test_the_inbox_report_says_why_an_urgent_email_was_missed_and_what_escalations_count() -> None:
    """An urgent email escalated as it should be but with a low priority is missed for its priority, and the report
    says so; the escalations are the budget used, not a success rate."""
    env = aaos.make("easy", env="inbox")
    env.reset()
    urgent = next(e for e in env.state()["emails"] if e["urgent"] and e["true_outcome"] == "escalated")
    role = env.spec.roles[0]
    for action_type, payload in (("open_email", {}), ("classify_email", {"category": urgent["true_category"]}),
                                 ("set_priority", {"level": "low"}), ("escalate_email", {})):
        result = env.step({role: {"action_type": action_type, "payload": {"email_id": urgent["id"], **payload}}})
        assert result.info["action_results"][role]["status"] == "applied", result.info["action_results"]
    report = aaos.kit_of("inbox").rendering.report(env.state())
    missed = report.split("Missed urgent emails", 1)[1].split("Violations", 1)[0]
    line = next(li for li in re.findall(r"<li>(.*?)</li>", missed) if urgent["id"] in li)
    assert urgent["subject"] in line and line.endswith("<small>(priority low, should be high)</small>")
    assert "Escalation budget used" in report
