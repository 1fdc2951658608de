"""The Space on a phone (390 x 844), in a real browser: the header whole, the Arena's message across the screen over
its buttons, the end-of-episode report's panels one under the other, and the leaderboard without sideways
scrolling; and at a desktop's 1280 px, the Arena's lanes and the Replay's logs read whole. One `python app.py` on a
loopback port for the module, Playwright with Debian's Chromium; screenshots go to artifacts/.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Locator, Page, ViewportSize, expect
from ui_fixtures import ARTIFACTS, open_page, pick, running_space, set_delay

VIEWPORT: ViewportSize = {"width": 390, "height": 844}
DESKTOP: ViewportSize = {"width": 1280, "height": 800}


@pytest.fixture(scope="module")
def space_url() -> Iterator[str]:
    yield from running_space(ARTIFACTS / "ui_phone_server.log")


def box(locator: Locator) -> dict[str, float]:
    found = locator.bounding_box()
    assert found is not None, locator
    return found


def overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return (a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"]
            and a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"])


def scrolls_sideways(locator: Locator) -> Any:
    return locator.evaluate("element => element.scrollWidth > element.clientWidth + 1")


def test_the_header_says_what_the_environment_is_and_how_to_use_the_space(page: Page) -> None:
    about, howto = page.locator("#aaos-header .aaos-env-about"), page.locator("#aaos-header .aaos-howto")
    expect(about).to_be_visible()
    expect(howto).to_be_visible()
    assert not about.evaluate("element => element.scrollHeight > element.clientHeight + 1")  # not cut short
    assert box(howto)["x"] + box(howto)["width"] <= VIEWPORT["width"]


def test_the_arenas_message_spans_the_screen_over_its_buttons(page: Page) -> None:
    page.get_by_role("tab", name="Arena", exact=True).click()
    message = page.locator("#aaos-arena-message")
    expect(message).to_contain_text("New arena")
    shown = box(message)
    assert shown["width"] > 0.8 * VIEWPORT["width"], shown
    for button in ("step", "run", "stop"):
        assert not overlap(shown, box(page.locator(f"#aaos-arena-{button}"))), button
    page.screenshot(path=str(ARTIFACTS / "ui_phone_arena.png"), full_page=True)


def test_the_end_reports_panels_do_not_overlap(page: Page) -> None:
    pick(page, "aaos-task", "Organisation simulation (easy, 20 steps)")
    set_delay(page, 0.1)
    page.locator("#aaos-run").click()
    expect(page.locator("#aaos-stat-state")).to_contain_text("done", timeout=120_000)
    report = page.locator("#aaos-report")
    expect(report).to_be_visible()
    panels = report.locator(":scope > .aaos-section")
    assert panels.count() >= 2
    pills = [box(pill) for pill in report.locator(":scope > .aaos-section").first.locator(".aaos-chip").all()]
    assert pills
    for index in range(1, panels.count()):
        other = box(panels.nth(index))
        assert not any(overlap(pill, other) for pill in pills), index
    assert not scrolls_sideways(page.locator("#aaos-report-box"))
    page.screenshot(path=str(ARTIFACTS / "ui_phone_report.png"), full_page=True)


def test_the_leaderboard_shows_the_mean_score_without_scrolling_sideways(page: Page) -> None:
    page.get_by_role("tab", name="Benchmark", exact=True).click()
    page.locator("#aaos-bench-run").click()
    board = page.locator("table#aaos-board")
    expect(board).to_contain_text("Champion", timeout=180_000)
    assert not scrolls_sideways(page.locator("#aaos-leaderboard .aaos-board-wrap"))
    headers = board.locator("th")
    mean = next(i for i in range(headers.count()) if headers.nth(i).inner_text().strip().lower() == "mean score")
    title, value = box(headers.nth(mean)), box(board.locator("tbody tr").first.locator("td").nth(mean))
    for cell in (title, value):
        assert cell["x"] >= 0 and cell["x"] + cell["width"] <= VIEWPORT["width"], cell
    assert abs(title["x"] - value["x"]) < 2  # the column's title stands over its value
    page.screenshot(path=str(ARTIFACTS / "ui_phone_leaderboard.png"), full_page=True)


def test_at_1280_the_arena_lanes_and_the_replay_logs_read_whole(browser: Browser, space_url: str) -> None:
    """At a desktop's 1280 px: an Arena lane shows its agent's whole name, and a Replay log's column titles wrap
    between words at most (not letter by letter: "Ste p")."""
    page = open_page(browser, space_url, DESKTOP)
    try:
        page.get_by_role("tab", name="Arena", exact=True).click()
        expect(page.locator("#aaos-arena-message")).to_contain_text("New arena")
        for lane in page.locator('[id^="aaos-arena-agent-"] input').all():
            assert not scrolls_sideways(lane), lane.input_value()
        page.get_by_role("tab", name="Replay", exact=True).click()
        expect(page.locator("#aaos-replay-note")).to_contain_text("Loaded")
        for table in ("#aaos-replay-actions", "#aaos-replay-oversight"):
            lines = page.locator(f"{table} thead th").evaluate_all(
                "cells => cells.map(cell => cell.getBoundingClientRect().height"
                " / parseFloat(getComputedStyle(cell).lineHeight || '16'))")
            assert lines and max(lines) < 4, (table, lines)
    finally:
        page.context.close()
