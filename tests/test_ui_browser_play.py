"""The Play tab's correctness in a real browser (issue 33): a control change during a run ends the run and draws the
new episode (never a stale page, never a toast), the main controls on the first screens, every end-of-episode
report's arithmetic, and the mixed team (the user's roles plus the agent's) in every environment. One
`python app.py` on a loopback port for the module, Playwright with Debian's Chromium.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, ViewportSize, expect
from ui_fixtures import ARTIFACTS, open_page, pick, running_space, set_delay

import aaos
from aaos.core.html import humanize

VIEWPORT: ViewportSize = {"width": 1280, "height": 800}
PHONE: ViewportSize = {"width": 390, "height": 844}
SERVER_LOG = ARTIFACTS / "ui_play_server.log"
TRIES = 10


@pytest.fixture(scope="module")
def space_url() -> Iterator[str]:
    yield from running_space(SERVER_LOG)


def step_shown(page: Page) -> int:
    return int(page.locator("#aaos-stat-step").inner_text().split("/")[0])


def run_a_few_steps(page: Page) -> None:
    """Start the champion and wait until it has played some steps (it is still running)."""
    page.locator("#aaos-run").click()
    expect(page.locator("#aaos-message")).to_contain_text("playing")
    page.wait_for_function("() => parseInt(document.querySelector('#aaos-stat-step').innerText) >= 2")


def expect_fresh(page: Page, env_id: str) -> None:
    """The page shows a fresh episode of `env_id` everywhere, and stays so (no late update of the old run)."""
    spec = aaos.spec(env_id)
    expect(page.locator("#aaos-stat-step")).to_have_text(re.compile(r"^0 / \d+$"))
    expect(page.locator("#aaos-message")).to_contain_text(f"New episode of {spec.title}")
    expect(page.locator("#aaos-role-cards .aaos-card")).to_have_count(len(spec.roles))
    expect(page.locator("#aaos-role input")).to_have_value(humanize(spec.roles[0]))
    page.wait_for_timeout(800)  # longer than a run's step: a stale update would have landed by now
    assert step_shown(page) == 0 and "playing" not in page.locator("#aaos-message").inner_text()


def no_toast(page: Page) -> None:
    assert page.locator(".toast-body, .toast-wrap .error").count() == 0, page.locator(".toast-wrap").inner_text()


def test_a_control_change_during_a_run_ends_it_and_draws_the_new_episode(page: Page) -> None:
    """Ten times in a row: run, then switch the environment, or press Reset, while it plays."""
    set_delay(page, 0.1)
    envs = ("inbox", "org")
    for i in range(TRIES):
        run_a_few_steps(page)
        if i % 2 == 0:
            target = envs[(i // 2) % 2]
            pick(page, "aaos-env", aaos.spec(target).title)
        else:
            target = current_env(page)
            page.locator("#aaos-reset").click()
        expect_fresh(page, target)
        no_toast(page)
        page.locator("#aaos-step").click()  # the page and the server agree: Step answers, no refused value
        expect(page.locator("#aaos-stat-step")).to_have_text(re.compile(r"^1 / \d+$"))
        no_toast(page)
    page.locator("#aaos-export").click()
    expect(page.locator("#aaos-message")).to_contain_text("Exported 1 steps")
    assert "Traceback" not in SERVER_LOG.read_text(encoding="utf-8")


def test_during_a_run_the_environment_list_and_the_form_are_the_users(page: Page) -> None:
    """The dropdown fires `input` when its list closes without a new choice: no new episode, the run goes on; and
    a role picked in the form during the run (to queue an action for it) stays picked as the run steps on."""
    set_delay(page, 0.1)
    spec = aaos.spec(current_env(page))
    run_a_few_steps(page)
    page.locator("#aaos-env input").click()
    expect(page.get_by_role("option", name=spec.title, exact=True)).to_be_visible()
    page.locator("#aaos-status").click()  # the list closes, the dropdown loses focus
    pick(page, "aaos-role", humanize(spec.roles[1]))
    expect(page.locator("#aaos-message")).to_contain_text("Episode over")
    assert step_shown(page) == int(page.locator("#aaos-stat-step").inner_text().split("/")[1])
    expect(page.locator("#aaos-role input")).to_have_value(humanize(spec.roles[1]))
    no_toast(page)


def test_opening_and_closing_the_action_list_keeps_what_was_typed(page: Page) -> None:
    """The action dropdown fires `input` when its list closes without a new choice: the form stays as typed."""
    pick(page, "aaos-role", humanize("engineer"))
    pick(page, "aaos-action", "report_anomaly")
    text = page.locator("#aaos-text-0 textarea, #aaos-text-0 input").first
    text.fill("p95 latency doubled since the deploy")
    page.locator("#aaos-action input").click()
    expect(page.get_by_role("option", name="report_anomaly", exact=True)).to_be_visible()
    page.locator("#aaos-status").click()  # the list closes, the dropdown loses focus
    page.wait_for_timeout(800)  # longer than an answer: a re-composed form would have landed by now
    expect(text).to_have_value("p95 latency doubled since the deploy")
    no_toast(page)


def current_env(page: Page) -> str:
    title = page.locator("#aaos-env input").input_value()
    return next(e for e in aaos.env_ids() if aaos.spec(e).title == title)


def test_on_a_phone_the_environment_and_run_are_within_the_first_two_screens(browser: Browser,
                                                                             space_url: str) -> None:
    page = open_page(browser, space_url, PHONE)
    try:
        for control in ("#aaos-env", "#aaos-run", "#aaos-step"):
            box = page.locator(control).bounding_box()
            assert box is not None and box["y"] + box["height"] < 2 * PHONE["height"], (control, box)
    finally:
        page.context.close()


def test_on_a_laptop_environment_step_and_run_are_on_the_first_screen(page: Page) -> None:
    for control in ("#aaos-env", "#aaos-run", "#aaos-step"):
        box = page.locator(control).bounding_box()
        assert box is not None and box["y"] + box["height"] <= VIEWPORT["height"], (control, box)
    assert page.locator("#aaos-message").bounding_box()["width"] >= 600  # a long message is no column


@pytest.mark.parametrize("env_id", ["org", "inbox", "chief_of_staff"])
def test_a_mixed_team_then_the_report_adds_up(page: Page, env_id: str) -> None:
    """The user queues the first role's action (the form's first action that does something: the action log leaves
    out no-ops), the champion decides the rest on Step; the logs say who decided; the champion then finishes and
    the report's arithmetic gives its score."""
    spec = aaos.spec(env_id)
    if current_env(page) != env_id:
        pick(page, "aaos-env", spec.title)
        expect(page.locator("#aaos-message")).to_contain_text(f"New episode of {spec.title}")
    role = spec.roles[0]
    expect(page.locator("#aaos-action input")).not_to_have_value("no_op")
    text = page.locator("#aaos-text-0 textarea, #aaos-text-0 input")
    if text.count() and text.first.is_visible():  # e.g. a plan's text
        text.first.fill("Ship the launch checklist")
    page.locator("#aaos-queue-button").click()
    expect(page.locator("#aaos-message")).to_contain_text(f"Queued for {humanize(role)}")
    page.locator("#aaos-others label", has_text="The agent under Agent run decides").click()
    page.locator("#aaos-step").click()
    expect(page.locator("#aaos-stat-step")).to_have_text(re.compile(r"^1 / \d+$"))
    expect(page.locator("#aaos-message")).to_contain_text("Champion (heuristic) decided the roles without")
    page.get_by_role("tab", name="Logs", exact=True).click()
    actions = page.locator("#aaos-actions")
    expect(actions).to_contain_text("you")
    if len(spec.roles) > 1:
        expect(actions).to_contain_text("Champion (heuristic)")
    page.get_by_role("tab", name="Play", exact=True).click()
    set_delay(page, 0.1)
    page.locator("#aaos-run").click()
    report = page.locator("#aaos-episode-report")
    expect(report).to_be_visible(timeout=120_000)
    formula = report.locator(".aaos-formula").inner_text()
    found = re.search(r"weighted mean = ([\d.]+) / ([\d.]+) = ([\d.]+); penalty = ([\d.]+); score = .* = ([\d.]+)",
                      formula)
    assert found, formula
    total, weights, mean, penalty, score = map(float, found.groups())
    assert abs(total / weights - mean) < 1e-3 and abs(mean / (1 + penalty) - score) <= 6e-4
    assert f"{score:.3f}" == page.locator("#aaos-stat-score").inner_text()
    no_toast(page)
