"""The Arena tab (issue 33 B and D): two to four agents on one episode in lock step, the score race, blind mode with
a recorded and exported pick, and the local model's committed episodes where its runtime is missing. Handlers are
called as the layout calls them; the last tests drive the real Space in Chromium in all three environments
(screenshots go to artifacts/)."""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, ViewportSize, expect
from ui_fixtures import ARTIFACTS, assert_no_reprs, pick, running_space, set_delay

import aaos
from aaos.core.trajectory import EpisodeMeta
from aaos.training.episodes import play
from aaos.ui import agents, arena, arena_tab, replays
from aaos.ui.arena import PICK_COLUMNS, Arena
from aaos.ui.session import Session

COS = EpisodeMeta("chief_of_staff", "steady_week", "hospital_director", 4)
NO_MODEL = ("", "", "", "")
"""The sidebar's Model settings, left empty: mode, model name, base URL, token."""
MISSING = "The local SmolLM2-135M model is not available: not installed here"


def start(lanes: tuple[str, ...], episode: str = arena_tab.PLAY_EPISODE, blind: bool = False,
          box: Arena | None = None, session: Session | None = None, env: str = COS.env) -> dict[str, Any]:
    padded = (*lanes, *["none"] * (arena.MAX_LANES - len(lanes)))
    return arena_tab.start(box, session or Session(COS), env, episode, blind, *padded, "per_role", *NO_MODEL[1:])


def finish(box: Arena) -> dict[str, Any]:
    updates = list(arena_tab.run(box, 0))
    return updates[-1]


@pytest.fixture
def no_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    """The local model's runtime is not installed (whatever this machine has)."""
    monkeypatch.setattr(agents, "local_problem", lambda: MISSING)


def test_lanes_play_in_lock_step_each_as_its_policy_alone_would() -> None:
    out = start(("heuristic", "random", "noop"))
    box = out["arena"]
    assert_no_reprs(out)
    for number in (1, 2, 3):
        shown = arena_tab.step(box)
        assert [len(lane.records) for lane in box.round.lanes] == [number] * 3
        assert f"{number} / " in shown["arena_status"]
    last = finish(box)
    assert box.round.done and "over for every lane" in last["arena_message"]
    for lane in box.round.lanes:
        alone = play(COS, aaos.policies.make(lane.agent, seed=COS.seed, env=COS.env))
        assert [r["score"] for r in lane.records] == [r["score"] for r in alone]
    lines = {trace.name: trace for trace in last["arena_race"].data}
    assert set(lines) == {lane.name for lane in box.round.lanes}
    for lane in box.round.lanes:
        assert list(lines[lane.name].y) == [0.0, *(r["score"] for r in lane.records)]
    assert "over" in arena_tab.step(box)["arena_status"]  # stepping a finished round changes nothing


def test_a_round_needs_two_agents_and_a_bad_one_changes_nothing() -> None:
    box = start(("heuristic", "random"))["arena"]
    before = box.round
    out = start(("heuristic",), box=box)
    assert "at least two agents" in out["arena_message"] and box.round is before
    out = start(("heuristic", "openai"), box=box)  # an endpoint without a model name cannot play, the other does
    lanes = box.round.lanes
    assert not lanes[1].live and "Enter a model name" in lanes[1].problem and lanes[0].live
    assert "Enter a model name" in out["arena_lanes"]


def test_an_episode_choice_of_the_previous_environment_gives_way_to_the_new_ones() -> None:
    stale = "org|org_simulation|vendor_outage_cascade|10000"  # a committed-episode choice, as org's would read
    inbox = start(("heuristic", "random"), stale, env="inbox")["arena"]
    assert inbox.round.meta.env == "inbox" and inbox.round.lanes[0].live
    cos = start(("heuristic", "random"), stale, env="chief_of_staff")["arena"]
    assert cos.round.meta == arena_tab._meta(arena_tab.episode_choices("chief_of_staff")[0][1], "chief_of_staff",
                                             None)


def test_blind_mode_hides_the_names_until_the_pick_is_recorded_and_exported(tmp_path: Path) -> None:
    session = Session(COS)
    box = start(("heuristic", "random", "noop", "oracle"), blind=True, session=session)["arena"]
    names = [lane.name for lane in box.round.lanes]
    stepped = arena_tab.step(box)
    assert not any(name in stepped["arena_lanes"] for name in names)
    assert [f"Agent {letter}" in stepped["arena_lanes"] for letter in "ABCD"] == [True] * 4
    assert box.round.order == arena.shuffled(COS, box.round.number, 4)  # drawn from the episode and the round
    assert "Finish the episode" in arena_tab.record_pick(box, "A")["arena_message"]
    last = finish(box)
    assert last["arena_pick_row"]["visible"] and "pick the agent" in last["arena_message"]
    assert "Choose a lane" in arena_tab.record_pick(box, None)["arena_message"]
    picked = box.round.letter_of("C")
    out = arena_tab.record_pick(box, "C")
    assert f"which was {picked.name}" in out["arena_message"] and all(name in out["arena_lanes"] for name in names)
    assert not out["arena_pick_row"]["visible"]
    assert "recorded already" in arena_tab.record_pick(box, "A")["arena_message"] and len(box.picks) == 1
    row = out["arena_picks"].iloc[0]
    assert (row["Picked"], row["Picked agent"], row["Seed"]) == ("C", picked.name, COS.seed)
    files = arena_tab.export_picks(None, box, session)
    with Path(files["arena_files"]["value"]).open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == list(PICK_COLUMNS) and rows[0]["Picked agent"] == picked.name
    assert "No picks" in arena_tab.export_picks(None, Arena(), session)["arena_message"]
    second = start(("heuristic", "random", "noop", "oracle"), blind=True, box=box, session=session)["arena"]
    assert second.round.number == 2 and len(second.picks) == 1  # picks outlive rounds


def test_stop_ends_a_run_between_steps_and_start_supersedes_it() -> None:
    box = start(("heuristic", "random"))["arena"]
    updates = arena_tab.run(box, 0)
    next(updates)
    arena_tab.stop(box)
    last = next(updates)
    assert "Stopped at step 1" in last["arena_message"]
    assert next(updates, None) is None
    updates = arena_tab.run(box, 0)
    next(updates)
    start(("heuristic", "noop"), box=box)
    assert next(updates, None) is None  # the new round's run is someone else's


def test_a_lane_whose_agent_raises_stops_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    box = start(("heuristic", "random"))["arena"]
    broken = box.round.lanes[1].policy

    def fail(observation: Any) -> Any:
        raise ConnectionError("endpoint went away")

    monkeypatch.setattr(broken, "act", fail)
    out = arena_tab.step(box)
    assert box.round.lanes[1].failed.startswith("ConnectionError") and len(box.round.lanes[0].records) == 1
    assert "endpoint went away" in out["arena_lanes"]
    finish(box)
    assert box.round.done


def test_the_local_model_starts_on_its_lanes_first_step_not_with_the_round(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[str] = []

    def cannot_start(name: str, env: str, mode: str) -> Any:
        started.append(name)
        raise RuntimeError("the server did not answer")

    monkeypatch.setattr(agents, "local_problem", lambda: None)
    monkeypatch.setattr(agents, "start_local", cannot_start)
    out = start(("local", "heuristic"))
    box = out["arena"]
    assert started == [] and box.round.lanes[0].live and "starts on the first step" in out["arena_lanes"]
    stepped = arena_tab.step(box)
    assert started == ["local"] and "the server did not answer" in stepped["arena_lanes"]
    assert box.round.lanes[0].done and len(box.round.lanes[1].records) == 1  # the champion's lane goes on


@pytest.mark.usefixtures("no_runtime")
def test_without_the_runtime_the_models_committed_episodes_are_replayed_step_by_step() -> None:
    committed = replays.committed("chief_of_staff")
    episode = arena_tab.episode_choices("chief_of_staff")[0][1]
    env, task, scenario, seed = episode.split("|")
    meta = EpisodeMeta(env, task, scenario, int(seed))
    out = arena_tab.first_open(None, Session(COS), "chief_of_staff", episode, False, *arena.DEFAULT_LANES,
                               "per_role", *NO_MODEL[1:])
    box = out["arena"]
    untrained, tuned, champion = box.round.lanes
    expected = {e.policy: e.result["score"] for e in committed if e.meta == meta}
    final = replays.committed_model("chief_of_staff", "local")
    assert untrained.committed["score"] == expected["untrained"] and tuned.committed["score"] == expected[final]
    assert untrained.live and tuned.live and champion.live  # the two models from the steps their evaluation kept
    assert "replays the model's committed evaluation episode" in out["arena_lanes"]
    last = finish(box)
    assert untrained.score == pytest.approx(expected["untrained"]) and tuned.score == pytest.approx(expected[final])
    assert f"{expected[final]:.3f}" in last["arena_lanes"]
    lines = {trace.name: trace for trace in last["arena_race"].data}
    assert set(lines) == {lane.name for lane in box.round.lanes}
    assert lines[tuned.name].y[-1] == pytest.approx(expected[final]) and len(lines[tuned.name].y) > 2
    elsewhere = start(arena.DEFAULT_LANES[:3], box=box)["arena"]  # the Play tab's episode was never evaluated
    assert "No committed evaluation episode" in elsewhere.round.lanes[0].problem
    assert not elsewhere.round.lanes[0].live and elsewhere.round.lanes[0].committed is None


def test_a_committed_episode_played_under_other_versions_is_said_not_comparable(
        monkeypatch: pytest.MonkeyPatch) -> None:
    entry = next(e for e in replays.committed("chief_of_staff") if e.policy == "untrained")
    older = replace(entry, result={**entry.result, "env_version": "0"})
    monkeypatch.setattr(replays, "committed_episode", lambda meta, policy: older)
    lane = arena.make_lane("local-untrained", entry.meta, MISSING)
    assert lane.committed == older.result and not lane.live  # its steps would play differently here: scores only
    assert "Not comparable with the live lanes" in lane.problem and "chief_of_staff v0" in lane.problem


# In the browser --------------------------------------------------------------------------------------------------

VIEWPORT: ViewportSize = {"width": 1280, "height": 1000}
ENVS = ("org", "inbox", "chief_of_staff")


@pytest.fixture(scope="module")
def space_url() -> Iterator[str]:
    yield from running_space(ARTIFACTS / "ui_arena_server.log")


def lane_label(agent: str) -> str:
    return arena.label(agent)


def choose(page: Page, elem_id: str, option: str) -> None:
    """Pick an arena dropdown's option by label (the lanes' lists hold the same labels: the one just opened is
    the last in the page)."""
    page.locator(f"#{elem_id} input").click()
    page.get_by_role("option", name=option, exact=True).last.click()
    expect(page.locator(f"#{elem_id} input")).to_have_value(option)


@pytest.mark.parametrize("env", ENVS)
def test_an_arena_round_in_the_browser(page: Page, env: str) -> None:
    pick(page, "aaos-env", aaos.spec(env).title)
    expect(page.locator("#aaos-header .aaos-env-about")).to_contain_text(aaos.spec(env).title)
    set_delay(page, 0.1)
    page.get_by_role("tab", name="Arena").click()
    lanes = page.locator("#aaos-arena-lanes .aaos-lane")
    expect(lanes).to_have_count(3)  # on first open: untrained vs fine-tuned vs champion
    expect(lanes.nth(2)).to_contain_text(lane_label("heuristic"))
    choose(page, "aaos-arena-agent-0", lane_label("random"))
    choose(page, "aaos-arena-agent-1", lane_label("noop"))
    choose(page, "aaos-arena-agent-3", lane_label("oracle"))
    choose(page, "aaos-arena-episode", "The Play tab's episode (task, scenario and seed)")
    page.locator("#aaos-arena-start").click()
    expect(page.locator("#aaos-arena-message")).to_contain_text("New arena")
    expect(lanes).to_have_count(4)
    page.locator("#aaos-arena-step").click()
    expect(page.locator("#aaos-arena-at")).to_have_text(re.compile(r"^1 / \d+$"))
    expect(lanes.nth(0)).to_contain_text("step 1 /")
    page.locator("#aaos-arena-run").click()
    expect(page.locator("#aaos-arena-message")).to_contain_text("over for every lane", timeout=120_000)
    expect(page.locator("#aaos-arena-race .legendtext")).to_have_count(4)  # every lane of this round
    page.screenshot(path=str(ARTIFACTS / f"ui_arena_{env}.png"), full_page=True)


def test_a_blind_round_and_its_pick_in_the_browser(page: Page) -> None:
    pick(page, "aaos-env", aaos.spec("chief_of_staff").title)
    expect(page.locator("#aaos-header .aaos-env-about")).to_contain_text(aaos.spec("chief_of_staff").title)
    set_delay(page, 0.1)
    page.get_by_role("tab", name="Arena").click()
    expect(page.locator("#aaos-arena-lanes .aaos-lane")).to_have_count(3)
    choose(page, "aaos-arena-agent-0", lane_label("random"))
    choose(page, "aaos-arena-agent-1", lane_label("noop"))
    page.locator("#aaos-arena-blind input").check()
    page.locator("#aaos-arena-start").click()
    lanes = page.locator("#aaos-arena-lanes")
    expect(lanes).to_contain_text("Agent C")
    expect(lanes).not_to_contain_text(lane_label("heuristic"))
    page.locator("#aaos-arena-run").click()
    expect(page.locator("#aaos-arena-message")).to_contain_text("pick the agent", timeout=120_000)
    page.locator("#aaos-arena-pick").get_by_text("Agent B").click()
    page.locator("#aaos-arena-record").click()
    expect(page.locator("#aaos-arena-message")).to_contain_text("you picked B")
    expect(lanes).to_contain_text(lane_label("heuristic"))
    expect(page.locator("#aaos-arena-picks tbody tr")).to_have_count(1)
    page.locator("#aaos-arena-export").click()
    expect(page.locator("#aaos-arena-files a")).to_have_attribute("href", re.compile(r"aaos_arena_picks_1\.csv$"))
