"""The Support Inbox and the Chief of Staff Arena in the Space, in a real browser (issues 12 and 13): each is
picked, played a few steps by hand through the action form, then finished by the champion, and its end report read.
Inbox: open, classify, set the priority and resolve an email, then the Grade Report. Chief of Staff: protect
tonight, book a request, check in, see the calendar and the trust bars move, then the rubric and the revealed drift
markers. One `python app.py` on a loopback port for the module, Playwright with Debian's Chromium; screenshots go
to artifacts/.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Locator, Page, ViewportSize, expect
from ui_fixtures import ARTIFACTS, pick, running_space, set_delay

from aaos.core.html import humanize

VIEWPORT: ViewportSize = {"width": 1280, "height": 1000}
SERVER_LOG = ARTIFACTS / "ui_envs_server.log"
INBOX_ROLE, INBOX_STEPS = "triage_agent", 50
COS_ROLE, COS_STEPS = "chief_of_staff", 40


@pytest.fixture(scope="module")
def space_url() -> Iterator[str]:
    yield from running_space(SERVER_LOG)


def card(page: Page, role: str) -> Locator:
    return page.locator(f'#aaos-role-cards .aaos-card[data-role="{role}"]')


def act(page: Page, role: str, action: str, step: int, steps: int, **choices: str) -> None:
    """Queue `role`'s `action` through the form (its choice slots set by label, in order) and step; expect step
    `step` of `steps`."""
    pick(page, "aaos-action", action)
    for slot, value in enumerate(choices.values()):
        pick(page, f"aaos-choice-{slot}", value)
    page.locator("#aaos-queue-button").click()
    expect(page.locator("#aaos-message")).to_contain_text(f"Queued for {humanize(role)}: {action}")
    page.locator("#aaos-step").click()
    expect(page.locator("#aaos-stat-step")).to_have_text(f"{step} / {steps}")
    expect(card(page, role).locator(".aaos-result")).to_contain_text(action)


def test_triage_an_email_by_hand_then_the_champion_finishes_and_the_grade_report_shows(page: Page) -> None:
    pick(page, "aaos-env", "Support Inbox")
    expect(page.locator("#aaos-role-cards .aaos-card")).to_have_count(1)
    expect(page.locator("#aaos-header .aaos-env-about")).to_contain_text("Support Inbox")
    pick(page, "aaos-task", "Basic inbox (easy, 50 steps)")
    expect(page.locator("#aaos-status")).to_contain_text("saas_helpdesk · Basic inbox · seed 0")
    expect(page.locator("#aaos-stat-step")).to_have_text(f"0 / {INBOX_STEPS}")
    expect(page.locator("#aaos-role input")).to_have_value("Triage agent")
    inbox = card(page, INBOX_ROLE)
    expect(inbox).to_contain_text("No email opened yet.")
    expect(inbox.locator(".aaos-pill", has_text="no category")).to_have_count(8)  # eight emails, none labelled

    pick(page, "aaos-action", "open_email")
    picked = page.locator("#aaos-choice-0 input").input_value()  # the email's id, then its subject
    email, subject = picked.split(" · ", 1)
    assert re.fullmatch(r"em_[0-9a-f]{6}", email) and subject, picked
    act(page, INBOX_ROLE, "open_email", 1, INBOX_STEPS, email_id=picked)
    expect(inbox.locator(f'.aaos-email[data-email="{email}"]')).to_contain_text(subject)
    opened = inbox.locator(".aaos-opened")
    expect(opened).to_contain_text(email)
    expect(opened).to_contain_text("from ")
    row = inbox.locator(f'.aaos-email[data-email="{email}"]')
    expect(row).to_contain_text("read")
    assert len(opened.inner_text()) > len(row.inner_text())  # the whole body (and thread), not the inbox's preview

    act(page, INBOX_ROLE, "classify_email", 2, INBOX_STEPS, email_id=picked, category="billing")
    act(page, INBOX_ROLE, "set_priority", 3, INBOX_STEPS, email_id=picked, level="high")
    expect(opened).to_contain_text("billing")
    expect(opened).to_contain_text("high")
    act(page, INBOX_ROLE, "mark_resolved", 4, INBOX_STEPS, email_id=picked)
    expect(opened).to_contain_text("resolved")
    expect(inbox.locator(f'.aaos-email[data-email="{email}"]')).to_have_count(0)  # closed: off the open list
    expect(inbox.locator(".aaos-chip", has_text="Resolved")).to_have_text("Resolved 1")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "ui_inbox_play.png"), full_page=True)

    pick(page, "aaos-action", "classify_email")  # a closed email is final: the form no longer offers it
    page.locator("#aaos-choice-0 input").click()
    expect(page.get_by_role("option", name=picked, exact=True)).to_have_count(0)
    page.keyboard.press("Escape")

    page.get_by_role("tab", name="World", exact=True).click()
    expect(page.locator("#aaos-world")).to_contain_text("Key accounts")
    expect(page.locator(f'#aaos-world .aaos-email[data-email="{email}"]')).to_contain_text("resolved")
    page.get_by_role("tab", name="Play", exact=True).click()

    set_delay(page, 0.1)
    page.locator("#aaos-run").click()
    expect(page.locator("#aaos-stat-state")).to_contain_text("done", timeout=90_000)
    expect(page.locator("#aaos-message")).to_contain_text("Episode over, final score")
    expect(page.locator("#aaos-episode-report h3")).to_have_text(re.compile(r"Episode report: score \d\.\d{3}"))
    for component in ("classification", "priority", "resolution", "urgent"):  # how the score adds up
        expect(page.locator("#aaos-arithmetic table.aaos-rubric")).to_contain_text(component, ignore_case=True)
    report = page.locator("#aaos-report")  # the inbox's Grade Report below it
    matrix = report.locator("table.aaos-confusion")
    expect(matrix.locator("tbody tr")).to_have_count(7)  # one row per true category
    expect(matrix.locator("thead")).to_contain_text("phishing")
    expect(report).to_contain_text("Missed urgent emails")
    expect(report).to_contain_text("Violations")
    expect(report).to_contain_text("Closed right")
    page.locator("#aaos-report").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "ui_inbox_report.png"), full_page=True)
    assert "Traceback" not in page.content()
    assert "Traceback" not in (SERVER_LOG).read_text(encoding="utf-8")


def test_play_by_hand_then_the_champion_finishes_and_the_rubric_shows(page: Page) -> None:
    pick(page, "aaos-env", "Chief of Staff Arena")
    expect(page.locator("#aaos-role-cards .aaos-card")).to_have_count(1)
    pick(page, "aaos-task", "Drifting priorities (medium, 40 steps)")
    expect(page.locator("#aaos-stat-step")).to_have_text(f"0 / {COS_STEPS}")
    chief = card(page, COS_ROLE)
    calendar = chief.locator("table.aaos-calendar")
    expect(calendar.locator("tr[data-day]")).to_have_count(10)
    expect(chief.locator(".aaos-bar")).to_have_count(5)
    expect(calendar.locator(".aaos-cal-now")).to_have_count(1)

    act(page, COS_ROLE, "protect", 1, COS_STEPS, block="family_evening", day="0")
    expect(calendar.locator('tr[data-day="0"] .aaos-cal-protected')).to_contain_text("Family evening")

    pick(page, "aaos-action", "schedule")
    expect(page.locator("#aaos-choice-0 input")).to_have_value(re.compile(r"^req_[0-9a-f]{6} · \S"))
    picked = page.locator("#aaos-choice-0 input").input_value()  # the request's id, then its title
    request = picked.split(" · ", 1)[0]
    act(page, COS_ROLE, "schedule", 2, COS_STEPS, request_id=picked, day="3", slot="midday")
    expect(calendar.locator('tr[data-day="3"] .aaos-cal-booked')).to_contain_text(request)
    expect(chief.locator(f'.aaos-request[data-request="{request}"]')).to_contain_text("scheduled")

    act(page, COS_ROLE, "check_in", 3, COS_STEPS, stakeholder="board")
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
    rubric = page.locator("#aaos-arithmetic table.aaos-rubric")  # how the score adds up
    for component in ("Outcomes", "Relationships", "Alignment", "Commitments", "Wellbeing"):
        expect(rubric).to_contain_text(component)
    expect(page.locator("#aaos-arithmetic .aaos-formula")).to_contain_text(re.compile(r"= \d\.\d{3}$"))
    report = page.locator("#aaos-report")
    expect(report).to_contain_text("Drift markers revealed")
    expect(report.locator(".aaos-drift").first).to_contain_text(re.compile(r"now prefers (slot|tone)"))
    report.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "ui_cos_report.png"), full_page=True)

    page.get_by_role("tab", name="World", exact=True).click()  # at 1280 px: nothing runs over anything else
    world = page.locator("#aaos-world")
    expect(world.locator("table.aaos-calendar")).to_be_visible()
    overflowing = world.evaluate("""world => [world, ...world.querySelectorAll(':scope > .aaos-section')]
        .filter(part => part.scrollWidth > part.clientWidth + 1).map(part => part.innerText.slice(0, 40))""")
    assert overflowing == [], overflowing  # the trust bars' text ran under the scores, the calendar off the view
    shown, timeline = world.bounding_box(), page.locator("#aaos-timeline-box").bounding_box()
    assert shown is not None and timeline is not None and shown["x"] + shown["width"] <= timeline["x"]
    page.screenshot(path=str(ARTIFACTS / "ui_cos_world.png"), full_page=True)
    assert "Traceback" not in page.content()
    assert "Traceback" not in (SERVER_LOG).read_text(encoding="utf-8")
