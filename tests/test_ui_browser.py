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
from playwright.sync_api import Browser, Locator, Page, expect, sync_playwright
from ui_fixtures import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, ROOT, running_space, wait_until

TIMEOUT_MS = 45_000
VIEWPORT = {"width": 1280, "height": 800}


@pytest.fixture(scope="module")
def space_url() -> Iterator[str]:
    path = os.pathsep.join(filter(None, [str(ROOT / "tests"), os.environ.get("PYTHONPATH")]))
    yield from running_space(ARTIFACTS / "ui_server.log", AAOS_ENVS="toy=toy_env:KIT", PYTHONPATH=path)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=list(CHROMIUM_ARGS))
        yield chromium
        chromium.close()


def open_space(browser: Browser, url: str) -> Page:
    """A new browser context (a new Gradio session) with the Space loaded and its first episode shown."""
    page = browser.new_context(viewport=VIEWPORT).new_page()
    page.set_default_timeout(TIMEOUT_MS)
    expect.set_options(timeout=TIMEOUT_MS)
    page.goto(url)
    expect(page.locator("#aaos-stat-step")).to_have_text(re.compile(r"^0 / \d+$"))
    expect(page.locator("#aaos-role-cards .aaos-card")).to_have_count(6)
    return page


@pytest.fixture
def page(browser: Browser, space_url: str) -> Iterator[Page]:
    page = open_space(browser, space_url)
    yield page
    page.context.close()


def pick(page: Page, elem_id: str, option: str) -> None:
    """Choose an option of a Gradio dropdown by its shown label."""
    page.locator(f"#{elem_id} input").click()
    page.get_by_role("option", name=option, exact=True).click()
    expect(page.locator(f"#{elem_id} input")).to_have_value(option)


def step_count(page: Page) -> int:
    return int(page.locator("#aaos-stat-step").inner_text().split("/")[0])


def expect_step(page: Page, step: int) -> None:
    expect(page.locator("#aaos-stat-step")).to_have_text(re.compile(rf"^{step} / \d+$"))


def card(page: Page, role: str) -> Locator:
    return page.locator(f'#aaos-role-cards .aaos-card[data-role="{role}"]')


def set_delay(page: Page, seconds: float) -> None:
    box = page.locator("#aaos-delay input[type=number]")
    box.fill(str(seconds))
    box.press("Enter")
    expect(box).to_have_value(str(seconds))


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
    page.locator("#aaos-seed input").fill("10003")
    page.locator("#aaos-reset").click()
    status = page.locator("#aaos-status")
    expect(status).to_contain_text("vendor_outage_cascade")
    expect(status).to_contain_text("seed 10003 (holdout variant)")
    expect_step(page, 0)

    page.get_by_role("tab", name="Reward").click()
    chart = page.locator("#aaos-reward-plot")
    expect(chart.locator("canvas, svg").first).to_be_visible()
    chart_before = chart.screenshot()
    page.get_by_role("tab", name="Play").click()

    pick(page, "aaos-role", "Engineer")
    pick(page, "aaos-action", "query_metrics")
    page.locator("#aaos-queue-button").click()
    expect(page.locator("#aaos-message")).to_contain_text("Queued for Engineer: query_metrics")
    expect(card(page, "engineer")).to_contain_text("Queued:")
    engineer_before = card(page, "engineer").inner_text()

    page.locator("#aaos-others label", has_text="Follow the champion").click()
    page.locator("#aaos-step").click()
    expect_step(page, 1)
    expect(page.locator("#aaos-message")).to_contain_text("Step 1: reward")
    expect(card(page, "engineer").locator(".aaos-result")).to_contain_text("query_metrics")
    assert card(page, "engineer").inner_text() != engineer_before
    expect(card(page, "product_manager").locator(".aaos-result")).not_to_contain_text("No action yet")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "ui_play.png"))

    page.get_by_role("tab", name="Reward").click()
    wait_until(lambda: chart.screenshot() != chart_before, 30, "the reward chart to change after the step")
    page.get_by_role("tab", name="Logs").click()
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
    pick(page, "aaos-task", "Crisis management (medium, 30 steps)")
    page.locator("#aaos-reset").click()
    expect(page.locator("#aaos-status")).to_contain_text("Crisis management")
    set_delay(page, 0.1)
    page.locator("#aaos-run").click()
    expect(page.locator("#aaos-stat-state")).to_contain_text("done", timeout=90_000)
    expect(page.locator("#aaos-stat-score")).to_have_text(re.compile(r"^0\.\d{3}$"))
    expect(page.locator("#aaos-status")).to_contain_text("final")
    expect(page.locator("#aaos-message")).to_contain_text("Episode over, final score")
    assert 1 < step_count(page) <= 30
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "ui_finished_run.png"))
    page.get_by_role("tab", name="Reward").click()
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
    page.get_by_role("tab", name="Benchmark").click()
    episodes = page.locator("#aaos-bench-episodes input")
    episodes.fill("1")
    episodes.press("Tab")
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
    page.get_by_role("tab", name="World").click()
    expect(page.locator("#aaos-world")).to_contain_text("Scores")
    page.get_by_role("tab", name="Play").click()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "ui_toy.png"))

    pick(page, "aaos-env", "AAOS organisation")
    expect(cards).to_have_count(6)
    expect_step(page, 0)
    assert "Traceback" not in page.content()
    assert "Traceback" not in (ARTIFACTS / "ui_server.log").read_text(encoding="utf-8")  # no event failed
