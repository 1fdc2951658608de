"""The Replay tab (issue 33 A): episodes from the Play tab, a benchmark's results, the committed training evaluation
and uploads, re-executed from their joint actions; step t's views, actions, reward and oversight log so far; the
first departure from the champion. Handlers are called as the layout calls them; the last tests drive the real
Space in Chromium in all three environments (screenshots go to artifacts/)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, ViewportSize, expect
from ui_fixtures import ARTIFACTS, assert_no_reprs, pick, rendered_text, running_space

import aaos
from aaos.bench.runner import Job, read_records, run
from aaos.core.seeding import holdout_salt
from aaos.core.trajectory import EpisodeMeta
from aaos.policies import baseline
from aaos.training.plots import LEGAL
from aaos.ui import benchmark, replay_tab, replays
from aaos.ui import watch_prose as words
from aaos.ui.layout import build_blocks
from aaos.ui.replay_tab import Watch
from aaos.ui.session import Session

ORG = EpisodeMeta("org", "org_simulation", "product_launch_failure", 3)
COS = EpisodeMeta("chief_of_staff", "steady_week", "hospital_director", 2)


def played(meta: EpisodeMeta, steps: int, policy: str = "heuristic",
           detour: tuple[int, str, dict[str, Any]] | None = None) -> Session:
    """A Play tab session after `steps` steps of `policy`; `detour` (step, role, action) replaces one action."""
    session = Session(meta)
    chooser = aaos.policies.make(policy, seed=meta.seed, env=meta.env)
    for number in range(1, steps + 1):
        joint = chooser.act(session.observation)
        if detour is not None and detour[0] == number:
            joint[detour[1]] = detour[2]
        session.step(joint)
    return session


def load(session: Session | None, source: str, env: str = "org", upload: str | None = None,
         index: int | None = 0) -> dict[str, Any]:
    return replay_tab.load(None, session, env, source, upload, index)


def test_the_play_tabs_episode_is_rebuilt_from_its_actions_view_for_view() -> None:
    session = played(ORG, 6, "random")
    out = load(session, "play")
    loaded = out["replay"].loaded
    assert loaded.steps == 6 and loaded.note == ""
    assert all("observation" not in record for record in loaded.records)  # the views come from the replay
    assert loaded.views == [record["observation"] for record in session.records]
    assert out["replay_step"]["maximum"] == 6 and out["replay_step"]["value"] == 1
    assert out["replay_cards"].count('class="aaos-card"') == len(aaos.spec("org").roles)
    assert_no_reprs(out)


def test_step_t_shows_that_steps_actions_and_the_oversight_log_so_far() -> None:
    session = played(ORG, 8, "random")
    watch = load(session, "play")["replay"]
    assert watch.step == 1 and replay_tab.show_step(watch, 1) == {}  # the step shown: nothing to draw again
    violations = [(r["step"], len(r["oversight_events"])) for r in session.records]
    for step in (4, 8, 1):
        view = replay_tab.show_step(watch, step)
        watch = view["replay"]
        assert watch.step == step
        assert f"{step} / 8" in view["replay_status"]
        assert set(view["replay_actions"]["Step"]) <= {step}
        assert len(view["replay_oversight"]) == sum(count for at, count in violations if at <= step)
        assert view["replay_plot"]["value"]["step"].max() == step
        joint = session.records[step - 1]["joint_action"]
        assert all(f"Queued: <code>{action['action_type']}" in view["replay_cards"] for action in joint.values())
    assert replay_tab.back(watch, 1) == {}  # clamped at both ends
    assert replay_tab.forward(watch, 8)["replay_step"]["value"] == 8
    assert replay_tab.forward(watch, 3)["replay_step"]["value"] == 4


def test_the_champion_marker_is_the_first_step_whose_joint_action_differs() -> None:
    own = replays.load(replays.from_play(ORG, played(ORG, 5).records)[0])
    assert own.departure is None
    assert "same" in replay_tab.show_step(Watch((), own), 3)["replay_status"]
    detour = {"action_type": "query_metrics", "payload": {"metric": "latency"}}
    session = played(ORG, 7, detour=(4, "oversight", detour))
    watch = load(session, "play")["replay"]
    assert watch.loaded.departure is not None and watch.loaded.departure.step == 4
    assert [role for role, _, _ in watch.loaded.departure.roles] == ["oversight"]
    at = replay_tab.jump(watch)
    assert at["replay_step"]["value"] == 4
    assert "query_metrics (metric: latency)" in at["replay_departure"]
    assert "departs at step 4" in at["replay_status"]
    assert replay_tab.show_step(watch, 3)["replay_departure"] == ""


def test_an_uploaded_export_replays_and_a_bad_file_changes_nothing(tmp_path: Path) -> None:
    session = played(COS, 5, "random")
    trajectory, _ = session.export()
    loaded = load(None, "upload", "chief_of_staff", str(trajectory))["replay"].loaded
    assert loaded.steps == 5 and loaded.entry.meta == COS
    bad = tmp_path / "bad.jsonl"
    for text, said in (("not json\n", "not JSON"), ('{"a": 1}\n', "neither trajectory records"),
                       (json.dumps({**session.records[0], "version": 1}) + "\n", "older than this reader")):
        bad.write_text(text, encoding="utf-8")
        out = load(None, "upload", "chief_of_staff", str(bad))
        assert set(out) == {"replay_note"} and said in out["replay_note"] and "Nothing was loaded" in out["replay_note"]


def test_a_trajectory_that_stops_replaying_shows_the_exact_steps_and_says_where() -> None:
    records = played(ORG, 6, "random").records
    records[3] = {**records[3], "reward": records[3]["reward"] + 0.5}
    loaded = replays.load(replays.from_play(ORG, records)[0])
    assert loaded.steps == 3
    assert "step 4" in loaded.note and "the 3 steps before it are shown" in loaded.note


def test_benchmark_results_of_baselines_are_played_again_and_checked(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    jobs = [Job(name, COS.env, COS.task, COS.scenario, COS.seed) for name in ("heuristic", "random")]
    records = run(jobs, {name: baseline(name) for name in ("heuristic", "random")}, out, concurrency=1)
    found = replays.read_upload(out)
    assert [e.policy for e in found] == ["heuristic", "random"] and all("re-played" in e.label for e in found)
    for entry, record in zip(found, records, strict=True):
        loaded = replays.load(entry)
        assert loaded.steps == record["steps"] and loaded.records[-1]["score"] == pytest.approx(record["score"])
    assert replays.load(found[0]).departure is None and replays.load(found[1]).departure is not None
    tampered = {**records[1], "score": records[1]["score"] + 0.1}
    loaded = replays.load(replays.entries([tampered])[0])
    assert loaded.steps == 0 and "not the recorded" in loaded.note
    model = {**records[1], "policy": "llm:some-model"}
    shown = load(None, "upload", upload=_jsonl(tmp_path / "model.jsonl", [model]))
    assert "holds no steps" in shown["replay_note"] and shown["replay_result"]["visible"]
    assert f"{model['score']:.3f}" in shown["replay_result"]["value"]


def test_this_tabs_salted_benchmark_is_replayed_under_its_own_salt_which_is_never_shown() -> None:
    """The Benchmark tab's holdout is drawn with a secret salt of its run: Replay plays those episodes again (the
    tab knows the salt for the session) without the salt in anything it shows."""
    session = Session(ORG)
    plan = benchmark.make_plan("org", ["heuristic"], [ORG.task], [ORG.scenario], ["holdout"], 1, 1, "per_role", None)
    assert isinstance(plan, benchmark.Plan) and plan.salted
    run = session.start_benchmark(plan)
    assert run.done.wait(120) and run.state == "finished" and run.holdout_salt is not None
    out = load(session, "benchmark")
    loaded = out["replay"].loaded
    record = read_records(run.results)[0]
    assert record["split"] == "holdout" and record["holdout_salt"] == run.holdout_salt
    assert loaded.steps == record["steps"] and loaded.records[-1]["score"] == pytest.approx(record["score"])
    assert "re-played" in out["replay_episode"]["choices"][0][0] and "another holdout salt" not in out["replay_note"]
    with run.holdout():
        salt = holdout_salt()
    assert salt and salt not in rendered_text(out) and salt not in repr(out["replay"])
    assert holdout_salt() != salt  # nothing of it stays in force
    elsewhere = replays.load(replays.entries([record])[0])  # the same record anywhere else: its scores only
    assert elsewhere.steps == 0 and words.OTHER_SALT in elsewhere.note
    session.close()


def _jsonl(path: Path, records: list[dict[str, Any]]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


def test_the_committed_evaluation_replays_the_baselines_and_the_models_whose_steps_it_kept() -> None:
    found = replays.committed("chief_of_staff")
    final = replays.committed_model("chief_of_staff", "local")
    assert final is not None and {e.policy for e in found} >= {"heuristic", "untrained", "sft", final}
    champion = next(e for e in found if e.policy == "heuristic")
    loaded = replays.load(champion)
    assert loaded.steps == champion.result["steps"] and loaded.departure is None
    assert loaded.records[-1]["score"] == pytest.approx(champion.result["score"])
    for policy in ("untrained", final):  # their steps were kept: re-executed exactly, to the recorded score
        entry = next(e for e in found if e.policy == policy)
        watched = replays.load(entry)
        assert watched.steps == entry.result["steps"] and watched.note == ""
        assert watched.records[-1]["score"] == pytest.approx(entry.result["score"])
    legal = next(e for e in found if e.policy == final + LEGAL)  # the final model decoding every legal call: kept too
    assert replays.load(legal).steps == legal.result["steps"]
    unkept = replays.load(replace(legal, records=()))  # a run that kept no steps of it: its scores only, saying why
    assert unkept.steps == 0 and f"{legal.policy} is a model" in unkept.note
    # a baseline recorded under another version, without kept steps: shown as its scores, never re-played
    older = replace(champion, records=(), result={**champion.result, "env_version": "0"})
    shown = replays.load(older)
    assert shown.steps == 0 and "chief_of_staff v0" in shown.note

def test_sources_without_episodes_say_what_to_do() -> None:
    fresh = Session(ORG)
    assert "no steps yet" in load(fresh, "play")["replay_note"]
    assert "No benchmark has run" in load(fresh, "benchmark")["replay_note"]
    assert "Upload a JSONL" in load(fresh, "upload")["replay_note"]
    assert replay_tab.first_open(Watch(), fresh, "org", "play", None) == {}  # opened before: nothing reloads


def test_the_environment_already_listed_keeps_the_step_shown_and_another_lists_its_own() -> None:
    """The sidebar's environment answered twice (a late page load listed it already) leaves the step the user went
    to; another environment lists its committed episodes from the first step."""
    listed = load(None, "committed", "chief_of_staff")["replay"]
    went = replay_tab.show_step(listed, 12)["replay"]
    assert went.step == 12
    assert replay_tab.choose_env(went, None, "chief_of_staff", "committed", None) == {}
    other = replay_tab.choose_env(went, None, "org", "committed", None)
    assert other["replay"].step == 1 and {e.meta.env for e in other["replay"].entries} == {"org"}


def test_the_tabs_listings_run_one_at_a_time_in_the_order_asked() -> None:
    """The page load's listing, still queued when the environment is changed, must finish before the change's runs
    (which then lists the environment chosen, not the one the page load was asked for)."""
    listings = {replay_tab.first_open, replay_tab.choose_source, replay_tab.choose_env, replay_tab.load}
    wired = [fn for fn in build_blocks().fns.values() if getattr(fn.fn, "__wrapped__", None) in listings]
    assert len(wired) == 6
    assert {(fn.concurrency_id, fn.concurrency_limit) for fn in wired} == {("replay-listing", 1)}


# In the browser --------------------------------------------------------------------------------------------------

VIEWPORT: ViewportSize = {"width": 1280, "height": 1000}
ENVS = {"org": ("AAOS organisation", 6), "inbox": ("Support Inbox", 1), "chief_of_staff": ("Chief of Staff", 1)}


@pytest.fixture(scope="module")
def space_url() -> Iterator[str]:
    yield from running_space(ARTIFACTS / "ui_replay_server.log")


def env_label(env: str) -> str:
    return next(e.title for e in (aaos.spec(i) for i in aaos.env_ids()) if e.id == env)


@pytest.mark.parametrize("env", list(ENVS))
def test_replaying_the_play_tabs_episode_in_the_browser(page: Page, env: str) -> None:
    pick(page, "aaos-env", env_label(env))
    roles = len(aaos.spec(env).roles)
    expect(page.locator("#aaos-role-cards .aaos-card")).to_have_count(roles)
    for step in (1, 2, 3):  # no-op steps: the champion acts at once, so the replay departs at step 1
        page.locator("#aaos-step").click()
        expect(page.locator("#aaos-stat-step")).to_have_text(re.compile(rf"^{step} / "))
    page.get_by_role("tab", name="Replay").click()
    page.locator("#aaos-replay-source").get_by_text("The Play tab's episode").click()
    expect(page.locator("#aaos-replay-note")).to_contain_text("3 steps")
    expect(page.locator("#aaos-replay-at")).to_have_text("1 / 3")
    expect(page.locator("#aaos-replay-cards .aaos-card")).to_have_count(roles)
    expect(page.locator("#aaos-replay-champion")).to_have_text("departs at step 1")
    expect(page.locator("#aaos-replay-departure")).to_contain_text("the champion plays")
    page.locator("#aaos-replay-next").click()
    expect(page.locator("#aaos-replay-at")).to_have_text("2 / 3")
    expect(page.locator("#aaos-replay-departure")).to_have_count(0)
    page.locator("#aaos-replay-next").click()
    expect(page.locator("#aaos-replay-at")).to_have_text("3 / 3")
    expect(page.locator("#aaos-replay-plot canvas, #aaos-replay-plot svg").first).to_be_visible()
    page.locator("#aaos-replay-prev").click()
    expect(page.locator("#aaos-replay-at")).to_have_text("2 / 3")
    page.screenshot(path=str(ARTIFACTS / f"ui_replay_{env}.png"), full_page=True)


def test_the_committed_evaluation_and_an_upload_in_the_browser(page: Page, tmp_path: Path) -> None:
    pick(page, "aaos-env", env_label("chief_of_staff"))
    page.get_by_role("tab", name="Replay").click()
    expect(page.locator("#aaos-replay-note")).to_contain_text("played the same seed again here")
    expect(page.locator("#aaos-replay-at")).to_have_text("1 / 20")
    page.locator("#aaos-replay-jump").click()
    expect(page.locator("#aaos-replay-departure")).to_contain_text("Departs from the champion here")
    found = replays.committed("chief_of_staff")
    final = replays.committed_model("chief_of_staff", "local")
    tuned = next(e for e in found if e.policy == final)  # its steps were kept: the fine-tuned model, step by step
    page.locator("#aaos-replay-episode input").click()
    page.get_by_role("option", name=tuned.label, exact=True).click()
    expect(page.locator("#aaos-replay-at")).to_have_text(f"1 / {tuned.result['steps']}")
    expect(page.locator("#aaos-replay-note")).to_contain_text(f"score {tuned.score:.3f}")
    session = played(COS, 4, "random")  # kept: its download folder goes with it
    trajectory, _ = session.export()
    page.locator("#aaos-replay-source").get_by_text("An uploaded JSONL file").click()
    page.locator("#aaos-replay-upload input[type=file]").set_input_files(str(trajectory))
    expect(page.locator("#aaos-replay-note")).to_contain_text("4 steps")
    expect(page.locator("#aaos-replay-at")).to_have_text("1 / 4")
    page.screenshot(path=str(ARTIFACTS / "ui_replay_committed.png"), full_page=True)
    page.locator("#aaos-replay-upload").get_by_role("button", name="Clear").click()
    unkept = next(e for e in found if e.policy == final + LEGAL)  # its result record alone: its scores only
    page.locator("#aaos-replay-upload input[type=file]").set_input_files(
        _jsonl(tmp_path / "result.jsonl", [dict(unkept.result)]))
    expect(page.locator("#aaos-replay-note")).to_contain_text(f"{final}{LEGAL} is a model")
    expect(page.locator("#aaos-replay-result")).to_contain_text(f"{unkept.score:.3f}")


def test_the_step_box_and_the_arrow_keys_show_their_step_at_once(page: Page) -> None:
    """A step typed in the slider's box shows on Enter, the box still focused; each arrow key on the slider shows
    the step it moves to (not the one before it)."""
    pick(page, "aaos-env", env_label("chief_of_staff"))
    page.get_by_role("tab", name="Replay").click()
    expect(page.locator("#aaos-replay-status")).to_contain_text("chief_of_staff · seed")  # not the page load's
    at = page.locator("#aaos-replay-at")
    expect(at).to_have_text("1 / 20")
    box = page.locator("#aaos-replay-step input[type=number]")
    box.fill("12")
    box.press("Enter")
    expect(at).to_have_text("12 / 20")
    expect(box).to_be_focused()
    slider = page.locator("#aaos-replay-step input[type=range]")
    slider.focus()
    for key, step in (("ArrowRight", 13), ("ArrowRight", 14), ("ArrowLeft", 13)):
        slider.press(key)
        expect(at).to_have_text(f"{step} / 20")
