"""One display name per model, declared once (aaos.policies.DISPLAY_NAMES): the shipped fine-tuned local model, the
untrained one and the baselines are named alike in Play, the Arena, Replay and the Training tab, while the data keep
their names (a result's policy, a training run's stages)."""

from __future__ import annotations

import pytest
from ui_fixtures import html_table

from aaos.policies import DISPLAY_NAMES, LOCAL_TRAINED, LOCAL_UNTRAINED, display_name
from aaos.ui import agents, arena, names, replays, training_tab


@pytest.mark.parametrize("env", ["org", "inbox", "chief_of_staff"])
def test_every_tab_names_each_model_alike(env: str) -> None:
    final = replays.committed_model(env, "local")
    assert final is not None and final not in DISPLAY_NAMES  # a stage name, in the data only
    by_tab = {
        "play": {"local": agents.label("local"), "local-untrained": agents.label("local-untrained"),
                 "heuristic": agents.label("heuristic"), "random": agents.label("random")},
        "arena": {agent: arena.label(agent) for agent in ("local", "local-untrained", "heuristic", "random")},
    }
    committed = {entry.policy: entry.who for entry in replays.committed(env)}
    by_tab["replay"] = {"local": committed[final], "local-untrained": committed["untrained"],
                        "heuristic": committed["heuristic"], "random": committed["random"]}
    rows = {row["Policy"] for row in html_table(training_tab.view(env).table)}
    expected = {"local": display_name(LOCAL_TRAINED), "local-untrained": display_name(LOCAL_UNTRAINED),
                "heuristic": display_name("heuristic"), "random": display_name("random")}
    for tab, shown in by_tab.items():
        assert shown == expected, tab
    assert set(expected.values()) <= rows
    assert f"{display_name(LOCAL_TRAINED)}, any legal call" in rows  # the guardrail-off run of the shipped model
    shelved, stage = ("dagger", "DAgger") if final == "sft" else ("sft", "SFT")  # a stage the project does not ship
    assert names.policy_name(shelved, final) == f"SmolLM2-135M after {stage}"
    assert names.policy_name(final, final) == display_name(LOCAL_TRAINED)
