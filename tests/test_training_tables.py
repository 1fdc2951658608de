"""The training tables of README.md and docs/training.md are what the committed summaries and evaluation episodes say
(regenerate them with `python -m aaos.training.tables`), the tables read every figure from a summary, and their rank
groups come from the paired evaluation episodes."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from test_ui_training import holdout_row, sample_summary

from aaos.bench import paired
from aaos.bench.paired import NoiseFloor, PairedDifference, Standing
from aaos.training import tables

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("document", tables.DOCUMENTS)
def test_the_documents_training_tables_match_the_committed_summaries(document: str) -> None:
    text = (REPO_ROOT / document).read_text(encoding="utf-8")
    found = tables.summaries()
    assert tables.render(text, found, tables.standings(found)) == text, (
        f"run: python -m aaos.training.tables ({document})")


def test_the_committed_ranks_come_from_every_policy_s_paired_evaluation_episodes() -> None:
    found = tables.summaries()
    for env, standing in tables.standings(found).items():
        policies = [row["policy"] for row in found[env]["holdout"]]
        assert standing.refused is None, (env, standing.refused)
        assert sorted(standing.ranks) == sorted(policies)
        assert standing.episodes == found[env]["holdout"][0]["episodes"]
        assert len(standing.comparisons) == len(policies) * (len(policies) - 1) // 2
        assert [floor.task for floor in standing.noise_floors] == [found[env]["task"]]


def test_every_committed_run_has_its_table_and_a_row_in_the_overview() -> None:
    found = tables.summaries()
    text = "".join((REPO_ROOT / document).read_text(encoding="utf-8") for document in tables.DOCUMENTS)
    names = {match["name"] for match in tables.BLOCK.finditer(text)}
    assert names == {"overview", *found}
    rows = tables.overview(found).splitlines()[2:]
    assert [row.split(",")[0].removeprefix("| ") for row in rows] == list(found)


def summary() -> dict[str, Any]:
    made = copy.deepcopy(sample_summary())
    made["holdout"].append(holdout_row("dagger_legal", 6))
    made["components"] = ["business_success", "collaboration"]
    made["holdout"][1] |= {"mean_score": 0.04, "ci_low": 0.01, "ci_high": 0.07}  # random
    return made


RANKS = {"noop": 7, "random": 6, "heuristic": 1, "untrained": 5, "sft": 3, "dagger": 1, "dagger_legal": 3}


def standing() -> Standing:
    """A made-up standing of summary()'s policies over 12 episodes (the ranks RANKS, one noise floor)."""
    pairs = tuple(PairedDifference(a, b, 12, 0.1, 0.05, 0.15, 0.001, 0.01) for a in RANKS for b in RANKS if a < b)
    return Standing(RANKS, pairs, (NoiseFloor("org_simulation", 12, 0.05, 0.04, 8),), episodes=12)


def test_the_tables_read_each_figure_from_the_summary() -> None:
    made = summary()
    overview = tables.overview({"org": made}).splitlines()
    assert overview[2] == ("| org, org_simulation | 12 | 0.200 | 0.040 [0.010, 0.070] | 0.400 | 0.500 | — | "
                           "**0.700 [0.660, 0.750]** (SmolLM2-135M fine-tuned, SFT+DAgger) | yes | 2.50 | "
                           "46 min (cpu) |")
    continued = tables.overview({"org": made | {"evaluation_kept": ["noop", "sft"]}}).splitlines()[2]
    assert continued.endswith("| 46 min and 2 policies' evaluation an earlier run played (cpu) |")
    sft_then_rft = made | {"trained": ["sft", "rft"], "final": "rft",
                           "holdout": [row | {"policy": "rft"} if row["policy"] == "dagger" else row
                                       for row in made["holdout"]]}
    imitation = tables.overview({"org": sft_then_rft}).splitlines()[2].split(" | ")[6]
    assert imitation == "0.600 [0.560, 0.650] (SFT)"  # no DAgger in this run: imitation alone is SFT's model
    detail = tables.detail(made, standing()).splitlines()
    assert detail[0].startswith("| rank | policy |") and detail[0].endswith("| business_success | collaboration |")
    shipped = next(line for line in detail if "(shipped)" in line)
    assert shipped.startswith("| 1 | **SmolLM2-135M fine-tuned** (shipped) | 0.700 [0.660, 0.750] | 92.0 % | 2.50 | "
                              "45 |")
    assert detail[3].startswith("| 6 | Random legal actions | 0.040 [0.010, 0.070] | — | 0.50 | — |")
    assert [line.split(" | ")[0] for line in detail[2:9]] == [f"| {RANKS[row['policy']]}" for row in made["holdout"]]
    assert ("Rank: policies not significantly different from their group's best share its rank (paired sign-flip "
            "tests on the same 12 holdout episodes, Holm-corrected over the 21 pairs, alpha 0.05; `aaos bench` ranks "
            "the same way). Noise floor, org_simulation: with 12 episodes, differences below 0.040 are noise; 0.05 "
            "needs 8 episodes.") in detail
    assert "SmolLM2-135M fine-tuned, any legal call" in detail[-1]


def test_a_reward_driven_stage_is_shown_beside_imitation_alone() -> None:
    made = summary() | {"final": "rft", "trained": ["sft", "dagger", "rft"]}
    made["holdout"].append(holdout_row("rft", 5) | {"mean_score": 0.8, "ci_low": 0.75, "ci_high": 0.85})
    overview = tables.overview({"org": made}).splitlines()[2]
    assert "| 0.500 | 0.700 [0.660, 0.750] | **0.800 [0.750, 0.850]** (SmolLM2-135M fine-tuned, SFT+DAgger+RFT) |" in (
        overview), overview
    assert "| SmolLM2-135M after DAgger | 0.700" in tables.detail(made, standing())


def test_too_few_episodes_to_tell_the_policies_apart_is_said_and_unpaired_ones_are_not_ranked() -> None:
    few = Standing(dict.fromkeys(RANKS, 1), standing().comparisons, episodes=8)
    assert ("8 paired episodes cannot tell 7 policies apart (21 pairs, Holm-corrected: it takes 10 or more), so they "
            "share a rank.") in tables.detail(summary(), few)
    scores = {row["policy"]: {("org_simulation", "s", seed, None): 0.5 for seed in range(3)}
              for row in summary()["holdout"]}
    scores["dagger"] = {("org_simulation", "s", 0, None): 0.5}
    refused = paired.standing(scores)
    detail = tables.detail(summary(), refused)
    assert "Rank: none, not paired, so not compared" in detail and "dagger lacks 2 of the 3 episodes" in detail
    assert all(line.startswith("| — |") for line in detail.splitlines()[2:9])


def test_a_final_model_not_clear_of_the_untrained_one_is_not_called_shipped() -> None:
    made = summary() | {"beats_untrained": False}
    overview = tables.overview({"org": made}).splitlines()[2]
    assert "(SmolLM2-135M fine-tuned, SFT+DAgger, not published: not clear of the untrained model)" in overview
    detail = tables.detail(made, standing())
    assert "(shipped)" not in detail
    assert "| 1 | **SmolLM2-135M fine-tuned** (not published: not clear of the untrained model) | 0.700" in detail


def test_a_block_no_summary_gives_is_refused_by_name() -> None:
    ranked = {"org": standing()}
    with pytest.raises(KeyError, match="'nowhere'"):
        tables.render("<!-- training:nowhere -->\nold\n<!-- /training:nowhere -->", {"org": summary()}, ranked)
    text = "a\n<!-- training:org -->\nstale\n<!-- /training:org -->\nb"
    expected = f"a\n<!-- training:org -->\n{tables.detail(summary(), standing())}<!-- /training:org -->\nb"
    assert tables.render(text, {"org": summary()}, ranked) == expected
