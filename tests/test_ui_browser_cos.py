"""The Chief of Staff Arena in the Space, in a real browser (issue 13, item 8): pick it, play a few steps by hand
through the action form (protect tonight, book a request, check in), see the calendar and the trust bars, then let
the champion finish the episode and read the rubric and the revealed drift markers. `python app.py` on a loopback
port, Playwright with Debian's Chromium; screenshots go to artifacts/."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Locator, Page, ViewportSize, expect
from ui_fixtures import ARTIFACTS, chromium, open_page, pick, running_space, set_delay

VIEWPORT: ViewportSize = {"width": 1280, "height": 1000}
ROLE = "chief_of_staff"
STEPS = 40


@pytest.fixture(scope="module")
def space_url() -> Iterator[str]:
    yield from running_space(ARTIFACTS / "ui_cos_server.log")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    yield from chromium()


@pytest.fixture
def page(browser: Browser, space_url: str) -> Iterator[Page]:
    page = open_page(browser, space_url, VIEWPORT)
    yield page
    page.context.close()


def card(page: Page) -> Locator:
    return page.locator(f'#aaos-role-cards .aaos-card[data-role="{ROLE}"]')


def act(page: Page, action: str, step: int, **choices: str) -> None:
    """Queue `action` through the form (its choice slots set by label, in order) and step; expect step `step`."""
    pick(page, "aaos-action", action)
    for slot, value in enumerate(choices.values()):
        pick(page, f"aaos-choice-{slot}", value)
    page.locator("#aaos-queue-button").click()
    expect(page.locator("#aaos-message")).to_contain_text(f"Queued for Chief of staff: {action}")
    page.locator("#aaos-step").click()
    expect(page.locator("#aaos-stat-step")).to_have_text(f"{step} / {STEPS}")
    expect(card(page).locator(".aaos-result")).to_contain_text(action)


def test_play_by_hand_then_the_champion_finishes_and_the_rubric_shows(page: Page) -> None:
    pick(page, "aaos-env", "Chief of Staff Arena")
    expect(page.locator("#aaos-role-cards .aaos-card")).to_have_count(1)
    pick(page, "aaos-task", "Drifting priorities (medium, 40 steps)")
    expect(page.locator("#aaos-stat-step")).to_have_text(f"0 / {STEPS}")
    chief = card(page)
    calendar = chief.locator("table.aaos-calendar")
    expect(calendar.locator("tr[data-day]")).to_have_count(10)
    expect(chief.locator(".aaos-bar")).to_have_count(5)
    expect(calendar.locator(".aaos-cal-now")).to_have_count(1)

    act(page, "protect", 1, block="family_evening", day="0")
    expect(calendar.locator('tr[data-day="0"] .aaos-cal-protected')).to_contain_text("Family evening")

    pick(page, "aaos-action", "schedule")
    expect(page.locator("#aaos-choice-0 input")).to_have_value(re.compile(r"^req_[0-9a-f]{6}$"))
    request = page.locator("#aaos-choice-0 input").input_value()
    act(page, "schedule", 2, request_id=request, day="3", slot="midday")
    expect(calendar.locator('tr[data-day="3"] .aaos-cal-booked')).to_contain_text(request)
    expect(chief.locator(f'.aaos-request[data-request="{request}"]')).to_contain_text("scheduled")

    act(page, "check_in", 3, stakeholder="board")
    expect(chief.locator(".aaos-result")).to_contain_text("prefers the")
    before = {bar.get_attribute("data-stakeholder"): bar.get_attribute("data-trust")
              for bar in chief.locator(".aaos-bar").all()}
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "ui_cos_play.png"), full_page=True)

    set_delay(page, 0.05)
    page.locator("#aaos-run").click()
    expect(page.locator("#aaos-stat-state")).to_contain_text("done", timeout=120_000)
    expect(page.locator("#aaos-message")).to_contain_text("Episode over, final score")
    after = {bar.get_attribute("data-stakeholder"): bar.get_attribute("data-trust")
             for bar in chief.locator(".aaos-bar").all()}
    assert set(after) == set(before) and after != before  # trust moved over the episode
    report = page.locator("#aaos-report")
    rubric = report.locator("table.aaos-rubric")
    for component in ("Outcomes", "Relationships", "Alignment", "Commitments", "Wellbeing"):
        expect(rubric).to_contain_text(component)
    expect(report).to_contain_text(re.compile(r"= \d\.\d{1,3}"))
    expect(report).to_contain_text("Drift markers revealed")
    expect(report.locator(".aaos-drift").first).to_contain_text(re.compile(r"now prefers (slot|tone)"))
    report.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "ui_cos_report.png"), full_page=True)
    assert "Traceback" not in page.content()
    assert "Traceback" not in (ARTIFACTS / "ui_cos_server.log").read_text(encoding="utf-8")
