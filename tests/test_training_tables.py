"""The training tables of README.md and docs/training.md are what the committed summaries say (regenerate them with
`python -m aaos.training.tables`), and the tables read every figure from a summary."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from test_ui_training import holdout_row, sample_summary

from aaos.training import tables

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("document", tables.DOCUMENTS)
def test_the_documents_training_tables_match_the_committed_summaries(document: str) -> None:
    text = (REPO_ROOT / document).read_text(encoding="utf-8")
    assert tables.render(text, tables.summaries()) == text, f"run: python -m aaos.training.tables ({document})"


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


def test_the_tables_read_each_figure_from_the_summary() -> None:
    made = summary()
    overview = tables.overview({"org": made}).splitlines()
    assert overview[2] == ("| org, org_simulation | 12 | 0.200 | 0.040 [0.010, 0.070] | 0.400 | 0.500 | "
                           "**0.700 [0.660, 0.750]** (SmolLM2 SFT+DAgger) | yes | 2.50 | 46 min |")
    detail = tables.detail(made).splitlines()
    assert detail[0].endswith("| business_success | collaboration |")
    shipped = next(line for line in detail if "(shipped)" in line)
    assert shipped.startswith("| **SmolLM2 SFT+DAgger** (shipped) | 0.700 [0.660, 0.750] | 92.0 % | 2.50 | 45 |")
    assert detail[3].startswith("| random | 0.040 [0.010, 0.070] | — | 0.50 | — |")
    assert "SmolLM2 SFT+DAgger, any legal call" in detail[-1]


def test_a_final_model_not_clear_of_the_untrained_one_is_not_called_shipped() -> None:
    made = summary() | {"beats_untrained": False}
    overview = tables.overview({"org": made}).splitlines()[2]
    assert "(SmolLM2 SFT+DAgger, not published: not clear of the untrained model)" in overview, overview
    detail = tables.detail(made)
    assert "(shipped)" not in detail
    assert "| **SmolLM2 SFT+DAgger** (not published: not clear of the untrained model) | 0.700" in detail, detail


def test_a_block_no_summary_gives_is_refused_by_name() -> None:
    with pytest.raises(KeyError, match="'nowhere'"):
        tables.render("<!-- training:nowhere -->\nold\n<!-- /training:nowhere -->", {"org": summary()})
    text = "a\n<!-- training:org -->\nstale\n<!-- /training:org -->\nb"
    expected = f"a\n<!-- training:org -->\n{tables.detail(summary())}<!-- /training:org -->\nb"
    assert tables.render(text, {"org": summary()}) == expected
