"""What a training report says a policy did: label accuracy, decision counts and agreement with the champion, on
real episodes of the baselines (no model needed)."""

from __future__ import annotations

import aaos
from aaos.core.trajectory import EpisodeMeta
from aaos.training.behaviour import agreement, behaviour, behaviour_key, episode_labels, tally
from aaos.training.episodes import play

INBOX = EpisodeMeta("inbox", "easy", "saas_helpdesk", 0)
COS = EpisodeMeta("chief_of_staff", "steady_week", "product_launch", 3)


def _episode(meta: EpisodeMeta, policy: str) -> list[dict]:
    return play(meta, aaos.policies.make(policy, seed=meta.seed, env=meta.env))


def test_tally_counts_each_true_value_apart_and_an_unlabelled_item_as_wrong() -> None:
    found = tally([("category", "billing", "billing"), ("category", "billing", "sales"),
                   ("category", "spam", None), ("priority", "low", "low")])
    assert found == {"category": {"accuracy": 0.3333, "by_true": {"billing": {"right": 1, "total": 2},
                                                                  "spam": {"right": 0, "total": 1}}},
                     "priority": {"accuracy": 1.0, "by_true": {"low": {"right": 1, "total": 1}}}}


def test_the_inbox_champion_reads_every_email_and_a_constant_labeller_one_category() -> None:
    champion = tally(episode_labels(_episode(INBOX, "heuristic")))
    assert champion["category"]["accuracy"] == 1.0 and len(champion["category"]["by_true"]) >= 3
    noop = tally(episode_labels(_episode(INBOX, "noop")))
    assert noop["category"]["accuracy"] == 0.0  # met every email that arrived, labelled none
    assert sum(v["total"] for v in noop["category"]["by_true"].values()) == sum(
        v["total"] for v in champion["category"]["by_true"].values())


def test_an_environment_that_labels_nothing_has_no_labels() -> None:
    assert episode_labels(_episode(COS, "heuristic")) == []


def test_behaviour_keys_name_the_finite_choices_and_the_status() -> None:
    spec = aaos.spec("inbox")
    action = {"action_type": "set_priority", "payload": {"email_id": "em_1", "level": "low"}}
    assert behaviour_key(spec, "triage_agent", action, "applied") == "set_priority(low)"
    assert behaviour_key(spec, "triage_agent", action, "no_effect") == "set_priority(low) (no_effect)"
    org = aaos.spec("org")
    flag = {"action_type": "raise_risk_flag", "payload": {"risk_id": "r1", "description": "x"}}
    assert behaviour_key(org, "risk_compliance", flag, "applied") == "risk_compliance: raise_risk_flag"


def test_behaviour_counts_per_episode_what_the_policy_did() -> None:
    episodes = [_episode(INBOX, "heuristic")]
    counts = behaviour(episodes, aaos.spec("inbox"))
    opened = sum(1 for step in episodes[0] if step["joint_action"]["triage_agent"]["action_type"] == "open_email")
    assert counts["open_email"] == opened > 0
    assert "no_op" not in counts and list(counts.values()) == sorted(counts.values(), reverse=True)
    assert behaviour([], aaos.spec("inbox")) == {}


def test_the_champion_agrees_with_itself_everywhere_and_random_does_not() -> None:
    spec = aaos.spec(COS.env)
    episodes = [_episode(COS, "heuristic")]
    itself = agreement(aaos.policies.make("heuristic", seed=COS.seed, env=COS.env), episodes, spec)
    assert itself and all(count["agree"] == count["total"] > 0 for count in itself.values())
    other = agreement(aaos.policies.make("random", seed=COS.seed, env=COS.env), episodes, spec)
    assert set(other) == set(itself)
    assert sum(c["agree"] for c in other.values()) < sum(c["total"] for c in other.values())
