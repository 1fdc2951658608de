"""The Support Inbox in the Space, in a real browser (issue 12, item 7): pick it, triage an email by hand through
the action form (open, classify, set its priority, resolve), then let the champion finish the episode and read the
Grade Report. `python app.py` on a loopback port, Playwright with Debian's Chromium; screenshots go to artifacts/.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Locator, Page, ViewportSize, expect
from ui_fixtures import ARTIFACTS, chromium, open_page, pick, running_space, set_delay

VIEWPORT: ViewportSize = {"width": 1280, "height": 900}
ROLE = "triage_agent"


@pytest.fixture(scope="module")
def space_url() -> Iterator[str]:
    yield from running_space(ARTIFACTS / "ui_inbox_server.log")


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
    expect(page.locator("#aaos-message")).to_contain_text(f"Queued for Triage agent: {action}")
    page.locator("#aaos-step").click()
    expect(page.locator("#aaos-stat-step")).to_have_text(f"{step} / 50")
    expect(card(page).locator(".aaos-result")).to_contain_text(action)


def test_triage_an_email_by_hand_then_the_champion_finishes_and_the_grade_report_shows(page: Page) -> None:
    pick(page, "aaos-env", "Support Inbox")
    expect(page.locator("#aaos-role-cards .aaos-card")).to_have_count(1)
    expect(page.locator("#aaos-header .aaos-env-about")).to_contain_text("Support Inbox")
    pick(page, "aaos-task", "Basic inbox (easy, 50 steps)")
    expect(page.locator("#aaos-status")).to_contain_text("saas_helpdesk · Basic inbox · seed 0")
    expect(page.locator("#aaos-stat-step")).to_have_text("0 / 50")
    expect(page.locator("#aaos-role input")).to_have_value("Triage agent")
    inbox = card(page)
    expect(inbox).to_contain_text("No email opened yet.")
    expect(inbox.locator(".aaos-pill", has_text="no category")).to_have_count(8)  # eight emails, none labelled

    pick(page, "aaos-action", "open_email")
    email = page.locator("#aaos-choice-0 input").input_value()
    assert re.fullmatch(r"em_[0-9a-f]{6}", email), email
    act(page, "open_email", 1, email_id=email)
    opened = inbox.locator(".aaos-opened")
    expect(opened).to_contain_text(email)
    expect(opened).to_contain_text("from ")
    row = inbox.locator(f'.aaos-email[data-email="{email}"]')
    expect(row).to_contain_text("read")
    assert len(opened.inner_text()) > len(row.inner_text())  # the whole body (and thread), not the inbox's preview

    act(page, "classify_email", 2, email_id=email, category="billing")
    act(page, "set_priority", 3, email_id=email, level="high")
    expect(opened).to_contain_text("billing")
    expect(opened).to_contain_text("high")
    act(page, "mark_resolved", 4, email_id=email)
    expect(inbox.locator(f'.aaos-email[data-email="{email}"]')).to_contain_text("resolved")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "ui_inbox_play.png"), full_page=True)

    pick(page, "aaos-action", "classify_email")  # a closed email is final: the form no longer offers it
    page.locator("#aaos-choice-0 input").click()
    expect(page.get_by_role("option", name=email, exact=True)).to_have_count(0)
    page.keyboard.press("Escape")

    page.get_by_role("tab", name="World").click()
    expect(page.locator("#aaos-world")).to_contain_text("Key accounts")
    page.get_by_role("tab", name="Play").click()

    set_delay(page, 0.1)
    page.locator("#aaos-run").click()
    expect(page.locator("#aaos-stat-state")).to_contain_text("done", timeout=90_000)
    expect(page.locator("#aaos-message")).to_contain_text("Episode over, final score")
    report = page.locator("#aaos-report")
    expect(report).to_contain_text(re.compile(r"Grade Report: score \d\.\d{3}"))
    for component in ("classification", "priority", "resolution", "urgent"):
        expect(report.locator(".aaos-chips").first).to_contain_text(component, ignore_case=True)
    matrix = report.locator("table.aaos-confusion")
    expect(matrix.locator("tbody tr")).to_have_count(7)  # one row per true category
    expect(matrix.locator("thead")).to_contain_text("phishing")
    expect(report).to_contain_text("Missed urgent emails")
    expect(report).to_contain_text("Violations")
    expect(report).to_contain_text("Closed right")
    page.locator("#aaos-report").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "ui_inbox_report.png"), full_page=True)
    assert "Traceback" not in page.content()
    assert "Traceback" not in (ARTIFACTS / "ui_inbox_server.log").read_text(encoding="utf-8")
