"""The Space in a real browser: `python app.py` on a loopback port, driven by Playwright with Debian's Chromium.

One server and one browser for the module; every test opens its own context (its own Gradio session). The server
also has the toy environment registered (AAOS_ENVS, with tests/ on its PYTHONPATH), as a third-party package
would register it; the organisation stays the default. Screenshots go to artifacts/ (gitignored).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

import pytest
from fake_openai import Script, serve
from playwright.sync_api import Browser, Locator, Page, ViewportSize, expect
from ui_fixtures import ARTIFACTS, ROOT, free_port, open_page, pick, running_space, set_delay, wait_until

from aaos.agents.llm import fix_hint

VIEWPORT: ViewportSize = {"width": 1280, "height": 800}
PHONE: ViewportSize = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def space_url() -> Iterator[str]:
    path = os.pathsep.join(filter(None, [str(ROOT / "tests"), os.environ.get("PYTHONPATH")]))
    yield from running_space(ARTIFACTS / "ui_server.log", AAOS_ENVS="toy=toy_env:KIT", PYTHONPATH=path)


def open_space(browser: Browser, url: str, viewport: ViewportSize = VIEWPORT) -> Page:
    """The Space in a new browser context, with the organisation's six role cards shown."""
    page = open_page(browser, url, viewport)
    expect(page.locator("#aaos-role-cards .aaos-card")).to_have_count(6)
    return page


@pytest.fixture
def page(browser: Browser, space_url: str) -> Iterator[Page]:
    page = open_space(browser, space_url)
    yield page
    page.context.close()


def step_count(page: Page) -> int:
    return int(page.locator("#aaos-stat-step").inner_text().split("/")[0])


def expect_step(page: Page, step: int) -> None:
    expect(page.locator("#aaos-stat-step")).to_have_text(re.compile(rf"^{step} / \d+$"))


def card(page: Page, role: str) -> Locator:
    return page.locator(f'#aaos-role-cards .aaos-card[data-role="{role}"]')


def type_seed(page: Page, seed: str) -> None:
    """Type a seed without starting it, once the server has seen it (it says the episode shown is another)."""
    page.locator("#aaos-seed input").fill(seed)
    expect(page.locator("#aaos-message")).to_contain_text(f"Seed {seed} is selected")


def type_raw(page: Page, text: str) -> None:
    """Replace the raw-JSON editor's text."""
    page.locator("#aaos-raw .cm-content").click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(text)
    expect(page.locator("#aaos-raw .cm-content")).to_have_text(text)


def test_the_page_loads_with_header_controls_and_six_role_cards(page: Page) -> None:
    expect(page.locator("#aaos-header h1")).to_contain_text("AAOS")
    expect(page.locator("#aaos-header .aaos-env-about")).to_contain_text("AAOS organisation")
    expect(page.locator("#aaos-header")).to_contain_text("How to use")
    for elem_id in ("aaos-env", "aaos-task", "aaos-scenario", "aaos-seed", "aaos-reset", "aaos-run", "aaos-stop",
                    "aaos-role", "aaos-action", "aaos-queue-button", "aaos-step", "aaos-export"):
        expect(page.locator(f"#{elem_id}")).to_be_visible()
    expect(page.locator("#aaos-stat-state")).to_contain_text("running")
    assert "Traceback" not in page.content()


def test_reset_a_holdout_scenario_then_queue_as_the_engineer_and_step(page: Page) -> None:
    pick(page, "aaos-task", "Crisis management (medium, 30 steps)")
    pick(page, "aaos-scenario", "A vendor outage cascades through dependent services (holdout)")
    type_seed(page, "10003")
    page.locator("#aaos-reset").click()
    status = page.locator("#aaos-status")
    expect(status).to_contain_text("vendor_outage_cascade")
    expect(status).to_contain_text("seed 10003 (holdout variant)")
    expect_step(page, 0)

    page.get_by_role("tab", name="Reward", exact=True).click()
    chart = page.locator("#aaos-reward-plot")
    expect(chart.locator("canvas, svg").first).to_be_visible()
    chart_before = chart.screenshot()
    page.get_by_role("tab", name="Play", exact=True).click()

    pick(page, "aaos-role", "Engineer")
    pick(page, "aaos-action", "query_metrics")
    page.locator("#aaos-queue-button").click()
    expect(page.locator("#aaos-message")).to_contain_text("Queued for Engineer: query_metrics")
    expect(card(page, "engineer")).to_contain_text("Queued:")
    engineer_before = card(page, "engineer").inner_text()

    page.locator("#aaos-others label", has_text="The agent under Agent run decides").click()  # the champion
    page.locator("#aaos-step").click()
    expect_step(page, 1)
    expect(page.locator("#aaos-message")).to_contain_text("Step 1: reward")
    expect(card(page, "engineer").locator(".aaos-result")).to_contain_text("query_metrics")
    assert card(page, "engineer").inner_text() != engineer_before
    expect(card(page, "product_manager").locator(".aaos-result")).not_to_contain_text("No action yet")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "ui_play.png"))

    page.get_by_role("tab", name="Reward", exact=True).click()
    wait_until(lambda: chart.screenshot() != chart_before, 30, "the reward chart to change after the step")
    page.get_by_role("tab", name="Logs", exact=True).click()
    expect(page.locator("#aaos-actions")).to_contain_text("query_metrics")


def test_an_invalid_payload_shows_an_error_and_changes_nothing(page: Page) -> None:
    pick(page, "aaos-role", "Product manager")
    pick(page, "aaos-action", "delegate_task")
    page.locator("#aaos-raw-toggle input").check()
    editor = page.locator("#aaos-raw .cm-content")
    expect(editor).to_contain_text('"delegate_task"')
    message = page.locator("#aaos-message .aaos-message-error")
    type_raw(page, '{"action_type": "delegate_task", "payload": {"task_id": "task_nope", "to": "engineer"}}')
    page.locator("#aaos-queue-button").click()
    expect(message).to_contain_text("payload.task_id must be one of the current choices")

    type_raw(page, "{not json")
    page.locator("#aaos-queue-button").click()
    expect(message).to_contain_text("Raw JSON is not valid JSON")
    expect(page.locator("#aaos-queue")).not_to_contain_text("delegate_task")
    expect_step(page, 0)
    expect(page.locator("#aaos-role-cards")).not_to_contain_text("Queued:")
    assert "Traceback" not in page.content()


def test_two_browser_contexts_keep_separate_simulations(browser: Browser, space_url: str) -> None:
    first, second = open_space(browser, space_url), open_space(browser, space_url)
    try:
        pick(first, "aaos-role", "Engineer")
        pick(first, "aaos-action", "query_metrics")
        first.locator("#aaos-queue-button").click()
        expect(first.locator("#aaos-message")).to_contain_text("Queued for Engineer")
        first.locator("#aaos-step").click()
        expect_step(first, 1)
        first.locator("#aaos-step").click()
        expect_step(first, 2)
        expect_step(second, 0)
        expect(second.locator("#aaos-role-cards .aaos-result")).to_have_count(0)  # no role has acted there
        second.locator("#aaos-step").click()
        expect_step(second, 1)
        expect_step(first, 2)
    finally:
        first.context.close()
        second.context.close()


def test_an_agent_run_streams_to_a_final_score(page: Page) -> None:
    pick(page, "aaos-task", "Crisis management (medium, 30 steps)")  # starts its episode
    expect(page.locator("#aaos-stat-step")).to_have_text("0 / 30")
    set_delay(page, 0.1)
    page.locator("#aaos-run").click()
    expect(page.locator("#aaos-stat-state")).to_contain_text("done", timeout=90_000)
    expect(page.locator("#aaos-stat-score")).to_have_text(re.compile(r"^0\.\d{3}$"))
    expect(page.locator("#aaos-status")).to_contain_text("final")
    expect(page.locator("#aaos-message")).to_contain_text("Episode over, final score")
    assert 1 < step_count(page) <= 30
    cut = page.locator("#aaos-role-cards .aaos-card").evaluate_all(
        "cards => cards.filter(card => card.scrollHeight > card.clientHeight + 1).map(card => card.dataset.role)")
    assert cut == []  # each card shows its whole view, however full: none scrolls inside, cutting lines
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "ui_finished_run.png"))
    page.get_by_role("tab", name="Reward", exact=True).click()
    expect(page.locator("#aaos-reward-plot canvas, #aaos-reward-plot svg").first).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "ui_finished_run_reward.png"))

    page.locator("#aaos-export").click()
    links = page.locator("#aaos-files a")
    expect(links).to_have_count(2)
    expect(page.locator("#aaos-files")).to_contain_text("_trajectory")
    expect(page.locator("#aaos-files")).to_contain_text("_actions")


def test_stop_cancels_a_running_agent(page: Page) -> None:
    set_delay(page, 0.4)
    page.locator("#aaos-run").click()
    wait_until(lambda: step_count(page) >= 2, 30, "the agent to take two steps")
    page.locator("#aaos-stop").click()
    expect(page.locator("#aaos-message")).to_contain_text("Agent stopped at step")
    stopped = int(page.locator("#aaos-message").inner_text().split("at step ")[1].split(".")[0])
    expect_step(page, stopped)
    page.locator("#aaos-step").click()
    expect_step(page, stopped + 1)
    expect(page.locator("#aaos-message")).to_contain_text(f"Step {stopped + 1}: reward")
    expect(page.locator("#aaos-stat-state")).to_contain_text("running")


def test_a_model_run_shows_its_calls_and_keeps_the_token_out_of_the_page(page: Page) -> None:
    token = "hf_" + "Br0w" * 8
    with serve(Script(modes=["ok"], latency_s=0.2)) as url:
        pick(page, "aaos-policy", "OpenAI-compatible model")
        expect(page.locator("#aaos-agent-help")).to_contain_text("Model settings")
        page.locator("#aaos-model-name textarea").fill("fake-model")
        page.locator("#aaos-base-url textarea").fill(url)
        secret = page.locator("#aaos-token input")
        expect(secret).to_have_attribute("type", "password")
        secret.fill(token)
        set_delay(page, 0.1)
        page.locator("#aaos-run").click()
        usage = page.locator("#aaos-usage")
        expect(usage).to_contain_text("fake-model")
        wait_until(lambda: step_count(page) >= 3, 60, "the model to take three steps")
        page.locator("#aaos-stop").click()
        expect(page.locator("#aaos-message")).to_contain_text("Agent stopped at step")
    expect(usage).to_contain_text("Model calls")
    expect(usage).to_contain_text("0 of")  # no fallback
    assert token not in page.content() and "Traceback" not in page.content()
    page.evaluate("window.scrollTo(0, 0)")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "ui_llm_run.png"))


def test_the_benchmark_tab_ranks_the_champion_above_random(page: Page) -> None:
    page.get_by_role("tab", name="Benchmark", exact=True).click()
    episodes = page.locator("#aaos-bench-episodes input")
    episodes.fill("3")
    expect(page.locator("#aaos-bench-plan")).to_contain_text("will play 60 episodes")
    episodes.fill("1")
    expect(page.locator("#aaos-bench-plan")).to_contain_text("will play 20 episodes")  # what the server received
    page.locator("#aaos-bench-run").click()
    status = page.locator("#aaos-bench-status")
    expect(status).to_contain_text("Done: 20 episodes", timeout=90_000)
    board = page.locator("#aaos-leaderboard")
    for name in ("Champion", "Random", "holdout", "train"):
        expect(board).to_contain_text(name)
    expect(board.locator("tbody tr").first).to_contain_text("Champion")
    expect(page.locator("#aaos-bench-chart .js-plotly-plot")).to_be_visible()
    expect(page.locator("#aaos-gate")).to_contain_text("no promote")
    expect(page.locator("#aaos-bench-files a")).to_have_count(2)
    expect(page.locator("#aaos-bench-files a[href$='/results.jsonl']")).to_have_count(1)
    expect(page.locator("#aaos-bench-files a[href$='/leaderboard.csv']")).to_have_count(1)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "ui_benchmark.png"), full_page=True)


def test_another_environment_plays_through_the_same_page_drawn_by_its_kit(page: Page) -> None:
    cards = page.locator("#aaos-role-cards .aaos-card")
    pick(page, "aaos-env", "Parcels (toy)")
    expect(cards).to_have_count(2)
    expect(page.locator("#aaos-header .aaos-env-about")).to_contain_text("Parcels (toy)")
    expect(page.locator("#aaos-task input")).to_have_value("Ship all (easy, 12 steps)")
    expect(page.locator("#aaos-role input")).to_have_value("Inspector")
    expect(card(page, "inspector").locator("h3")).to_have_text("Inspector")
    expect(card(page, "inspector")).to_contain_text("Dock")
    expect(page.locator("#aaos-stat-step")).to_have_text("0 / 12")

    pick(page, "aaos-action", "inspect")
    page.locator("#aaos-queue-button").click()
    expect(page.locator("#aaos-message")).to_contain_text("Queued for Inspector: inspect")
    page.locator("#aaos-step").click()
    expect(page.locator("#aaos-stat-step")).to_have_text("1 / 12")
    expect(card(page, "inspector").locator(".aaos-result")).to_contain_text("inspect")
    expect(card(page, "packer").locator(".aaos-result")).to_contain_text("no_op")
    page.get_by_role("tab", name="World", exact=True).click()
    expect(page.locator("#aaos-world")).to_contain_text("Scores")
    page.get_by_role("tab", name="Play", exact=True).click()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "ui_toy.png"))

    pick(page, "aaos-env", "AAOS organisation")
    expect(cards).to_have_count(6)
    expect_step(page, 0)
    assert "Traceback" not in page.content()
    assert "Traceback" not in (ARTIFACTS / "ui_server.log").read_text(encoding="utf-8")  # no event failed


def test_an_unreachable_model_is_said_as_a_warning_and_stops_the_run(page: Page) -> None:
    token = "hf_" + "Cl0s" * 8
    pick(page, "aaos-policy", "OpenAI-compatible model")
    page.locator("#aaos-model-name textarea").fill("fake-model")
    page.locator("#aaos-base-url textarea").fill(f"http://127.0.0.1:{free_port()}/v1")  # nothing listens there
    page.locator("#aaos-token input").fill(token)
    page.locator("#aaos-run").click()
    warning = page.locator("#aaos-message .aaos-message-warn")
    expect(warning).to_contain_text("fake-model failed: it decided none of the 6 actions of step 1")
    expect(warning).to_contain_text("APIConnectionError")
    expect(warning).to_contain_text(fix_hint("APIConnectionError"))
    expect(page.locator("#aaos-usage")).to_contain_text("6 of 6 actions")
    expect_step(page, 0)  # the run stopped without playing the champion's fallback as the model's step
    expect(page.locator("#aaos-stat-state")).to_contain_text("running")
    assert token not in page.content()


def test_a_new_task_scenario_or_seed_is_the_episode_played(page: Page) -> None:
    status = page.locator("#aaos-status")
    pick(page, "aaos-task", "Organisation simulation (easy, 20 steps)")
    expect(page.locator("#aaos-stat-step")).to_have_text("0 / 20")
    page.locator("#aaos-step").click()
    expect_step(page, 1)
    pick(page, "aaos-scenario", "Model quality decays while dashboards look green (train)")
    expect(status).to_contain_text("Model quality decays while dashboards look green")
    expect_step(page, 0)
    expect(page.locator("#aaos-scenario-help")).to_contain_text("only the data analyst")
    type_seed(page, "12")
    expect(page.locator("#aaos-message .aaos-message-warn")).to_contain_text("the episode shown has seed 0")
    expect(status).to_contain_text("seed 0 (train variant)")
    page.locator("#aaos-seed input").press("Enter")
    expect(status).to_contain_text("silent_data_drift · Organisation simulation · seed 12 (train variant)")
    page.locator("#aaos-step").click()
    expect(page.locator("#aaos-message")).to_contain_text("Step 1: reward")


@pytest.mark.parametrize(("seed", "shown"), [("-3", "-3"), ("2.5", "2.5")])
def test_a_bad_seed_gets_the_spaces_message_and_no_popup(page: Page, seed: str, shown: str) -> None:
    box = page.locator("#aaos-seed input")
    box.fill(seed)
    message = page.locator("#aaos-message .aaos-message-error")
    expect(message).to_contain_text(f"The seed must be a whole number, 0 or more (got {shown})")
    box.press("Enter")
    expect(message).to_contain_text(f"(got {shown})")
    page.locator("#aaos-reset").click()
    expect(message).to_contain_text(f"(got {shown})")
    expect(box).to_have_value(seed)  # the box keeps what was typed; nothing was rounded
    expect(page.locator("#aaos-status")).to_contain_text("seed 0 (train variant)")
    expect(page.locator(".toast-body")).to_have_count(0)  # no Gradio popup
    assert "Traceback" not in (ARTIFACTS / "ui_server.log").read_text(encoding="utf-8")


def test_step_from_any_tab_and_step_numbers_agree_everywhere(page: Page) -> None:
    page.locator("#aaos-others label", has_text="The agent under Agent run decides").click()  # the champion
    page.get_by_role("tab", name="Logs", exact=True).click()
    page.locator("#aaos-step").click()
    expect_step(page, 1)
    page.locator("#aaos-step").click()
    expect_step(page, 2)
    expect(page.locator("#aaos-message")).to_contain_text("Step 2: reward")
    first_row = page.locator("#aaos-actions tbody tr").first
    expect(first_row.locator("td").first).to_have_text("2")


def test_raw_json_keeps_the_action_picker_and_lists_the_fields_valid_values(page: Page) -> None:
    pick(page, "aaos-role", "Product manager")
    pick(page, "aaos-action", "delegate_task")
    page.locator("#aaos-raw-toggle input").check()
    expect(page.locator("#aaos-raw .cm-content")).to_contain_text('"delegate_task"')
    expect(page.locator("#aaos-action")).to_be_visible()
    help_box = page.locator("#aaos-action-help")
    expect(help_box).to_contain_text("task_id: one of task_")
    expect(help_box).to_contain_text("to: one of ")
    pick(page, "aaos-action", "propose_plan")
    expect(page.locator("#aaos-raw .cm-content")).to_contain_text('"propose_plan"')
    expect(help_box).to_contain_text("plan: free text")


def boxes(page: Page, selector: str) -> list[dict[str, float]]:
    return page.locator(selector).evaluate_all(
        "es => es.map(e => { const b = e.getBoundingClientRect(); "
        "return {x: b.x, y: b.y, right: b.right, bottom: b.bottom, width: b.width, height: b.height}; })")


def overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return a["x"] < b["right"] and b["x"] < a["right"] and a["y"] < b["bottom"] and b["y"] < a["bottom"]


WORD_FITS = """headers => headers.map(th => {
    const style = getComputedStyle(th), context = document.createElement("canvas").getContext("2d");
    context.font = style.font;
    const word = Math.max(...th.innerText.trim().split(/\\s+/).map(w => context.measureText(w).width));
    return [th.innerText.trim(), th.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight), word];
})"""
"""Each header cell's text, the room inside it and the width of its longest word (in the cell's font)."""


def test_on_a_phone_the_controls_come_first_and_nothing_overlaps(browser: Browser, space_url: str) -> None:
    page = open_space(browser, space_url, PHONE)
    try:
        for control in ("#aaos-step", "#aaos-run", "#aaos-env"):  # within the first two screens
            assert boxes(page, control)[0]["bottom"] <= 2 * PHONE["height"], control
        assert boxes(page, "#aaos-sidebar")[0]["y"] < boxes(page, "#aaos-cards")[0]["y"]  # the episode's controls first
        stats = boxes(page, "#aaos-status .aaos-stat")
        assert len(stats) == 5 and all(s["right"] <= PHONE["width"] for s in stats)
        assert not any(overlap(a, b) for i, a in enumerate(stats) for b in stats[i + 1:])
        for name in ("Play", "World", "Reward", "Logs", "Benchmark", "Training"):  # none behind the overflow menu
            expect(page.get_by_role("tab", name=name, exact=True)).to_be_visible()
        page.get_by_role("tab", name="Reward", exact=True).click()
        expect(page.locator("#aaos-reward-plot canvas, #aaos-reward-plot svg").first).to_be_visible()
        assert boxes(page, "#aaos-reward-plot")[0]["height"] >= 200
        page.get_by_role("tab", name="Logs", exact=True).click()
        # no header wraps letter by letter: each is at least as wide as its longest word
        widths = page.locator("#aaos-actions thead th").evaluate_all(WORD_FITS)
        assert len(widths) == 7 and all(room >= word - 1 for _, room, word in widths), widths
        ARTIFACTS.mkdir(exist_ok=True)
        page.get_by_role("tab", name="Play", exact=True).click()
        page.screenshot(path=str(ARTIFACTS / "ui_phone.png"))
    finally:
        page.context.close()


def test_a_wide_screen_uses_its_width(browser: Browser, space_url: str) -> None:
    page = open_space(browser, space_url, {"width": 1920, "height": 1080})
    try:
        assert boxes(page, "#aaos-content")[0]["right"] >= 1850
        cards = boxes(page, "#aaos-role-cards .aaos-card")
        assert min(c["width"] for c in cards) >= 400
        arrow, text = boxes(page, "#aaos-scenario .icon-wrap")[0], page.locator("#aaos-scenario input")
        text_end = text.evaluate("e => e.getBoundingClientRect().right - parseFloat(getComputedStyle(e).paddingRight)")
        assert text_end <= arrow["x"]  # a long choice's text ends before the dropdown arrow
        page.screenshot(path=str(ARTIFACTS / "ui_wide.png"))
    finally:
        page.context.close()
