"""Helpers for the Space's tests: calling the handlers as the layout does, and running the real server."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import plotly.graph_objects as go
from helpers import free_port
from playwright.sync_api import Browser, Page, ViewportSize, expect, sync_playwright

from aaos.core.trajectory import state_hash
from aaos.ui import agents, benchmark_tab, play_tab
from aaos.ui.session import Session

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts"
PYTHON_REPRS: tuple[str, ...] = ("None", "{'", "['", "True", "False", "<aaos", "object at 0x", "Traceback")
"""Text that would give away a Python repr (or a traceback) in rendered output."""
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS: tuple[str, ...] = ("--no-sandbox", "--headless=new", "--disable-gpu", "--disable-background-networking",
                                  "--disable-component-update", "--disable-sync", "--no-first-run")


def rendered_text(value: Any) -> str:
    """Every string, table cell and figure a handler returned (outputs by name, updates, lists), one per line;
    the session (kept on the server) is left out."""
    if isinstance(value, str):
        return value
    if isinstance(value, pd.DataFrame):
        return "\n".join([*map(str, value.columns), *(str(cell) for cell in value.to_numpy().ravel())])
    if isinstance(value, go.Figure):
        return value.to_json()
    if isinstance(value, dict):
        return "\n".join(rendered_text(v) for v in value.values())
    if isinstance(value, list | tuple):
        return "\n".join(rendered_text(v) for v in value)
    return ""


def html_table(text: str) -> list[dict[str, str]]:
    """The rows of the first HTML table in `text` as {column header: cell text}."""
    def plain(cell: str) -> str:
        return html.unescape(re.sub(r"<[^>]+>", "", cell)).strip()

    head, body = text.split("</thead>", 1)
    body = body.split("</table>", 1)[0]
    columns = [plain(cell) for cell in re.findall(r"<th[^>]*>(.*?)</th>", head)]
    return [dict(zip(columns, (plain(cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row)), strict=True))
            for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body)]


def assert_no_reprs(outputs: dict[str, Any]) -> None:
    text = rendered_text({name: value for name, value in outputs.items() if not isinstance(value, go.Figure)})
    for marker in PYTHON_REPRS:
        assert marker not in text, f"{marker!r} in rendered output"


def reset(session: Session | None = None, task: str = "full_episode", scenario: str = "product_launch_failure",
          seed: float | None = 0, role: str = "engineer") -> dict[str, Any]:
    return play_tab.reset(None, session, "org", task, scenario, seed, role, False)


def form_slots(values: dict[str, Any], session: Session, role: str, action_type: str) -> list[Any]:
    """The slot values the form would send for these payload fields (dropdowns first, then textboxes)."""
    _, fields = play_tab.form_fields(session, role, action_type)
    choices: list[Any] = [None] * play_tab.SLOTS
    texts: list[Any] = [""] * play_tab.SLOTS
    for i, field in enumerate(fields):
        if field.name in values:
            (choices if field.choices is not None else texts)[i] = values[field.name]
    return [*choices, *texts]


def queue_form(session: Session, role: str, action_type: str, **payload: Any) -> dict[str, Any]:
    slots = form_slots(payload, session, role, action_type)
    return play_tab.queue_action(None, session, role, action_type, False, "", *slots)


def queue_raw(session: Session, role: str, text: str) -> dict[str, Any]:
    slots = [None] * play_tab.SLOTS + [""] * play_tab.SLOTS
    return play_tab.queue_action(None, session, role, None, True, text, *slots)


def steps(session: Session, others: str = "no_op", role: str = "engineer", agent: str = "heuristic",
          mode: str = "per_role", model: str | None = None, base_url: str | None = None,
          token: str | None = None) -> list[dict[str, Any]]:
    """Every update of a Step, as the layout calls it (others: "no_op", or "agent" for the agent `agent`)."""
    return list(play_tab.step(None, session, others, role, None, False, agent, mode, model, base_url, token))


def step(session: Session, others: str = "no_op", role: str = "engineer", agent: str = "heuristic") -> dict[str, Any]:
    """A Step's last update."""
    return steps(session, others, role, agent)[-1]


def run_agent(session: Session, name: str, mode: str = "per_role", model: str | None = None,
              base_url: str | None = None, token: str | None = None) -> Iterator[dict[str, Any]]:
    """An agent run's updates, as the layout calls it (no delay between steps)."""
    yield from play_tab.run_agent(None, session, name, 0, mode, model, base_url, token)


def run_benchmark(session: Session | None, policies: Sequence[str] = ("heuristic", "random"),
                  tasks: Sequence[str] = ("org_simulation",),
                  scenarios: Sequence[str] = ("product_launch_failure", "vendor_outage_cascade"),
                  splits: Sequence[str] = ("train", "holdout"), episodes: float | None = 1,
                  concurrency: float | None = 4, candidate: str = "random", mode: str = "per_role",
                  model: str | None = None, base_url: str | None = None,
                  token: str | None = None) -> list[dict[str, Any]]:
    """Every update of a benchmark run, as the layout calls it."""
    return list(benchmark_tab.run_benchmark(None, session, "org", list(policies), list(tasks), list(scenarios),
                                            list(splits), episodes, concurrency, candidate, mode, model, base_url,
                                            token))


def fingerprint(session: Session) -> tuple[str, int, dict[str, Any]]:
    """What must not change after a rejected input: the state, the step count and the queue."""
    return state_hash(session.env.state()), session.step_count, dict(session.queue)


def wait_until(condition: Callable[[], bool], timeout: float, what: str, poll: float = 0.1) -> None:
    """Poll `condition` until it holds; fail with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(poll)


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


STARTUP_S = 600
"""How long the Space may take to answer: minutes on a machine whose cores the slow tier keeps busy."""


def start_space(log: Path, timeout: float = STARTUP_S, **variables: str) -> tuple[subprocess.Popen[bytes], str]:
    """Start `python app.py` (with these extra environment variables) on a free loopback port and wait until it
    answers; returns the process and its base URL (the caller stops it)."""
    port = free_port()
    env = dict(os.environ, GRADIO_SERVER_NAME="127.0.0.1", GRADIO_SERVER_PORT=str(port),
               GRADIO_ANALYTICS_ENABLED="False", **variables)
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        process = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=out,
                                   stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: process.poll() is not None or _healthy(url), timeout, "the Space to answer /health")
        assert process.poll() is None, f"the Space exited early; see {log}"
    except BaseException:
        process.kill()
        process.wait()
        raise
    return process, url


def running_space(log: Path, timeout: float = STARTUP_S, **variables: str) -> Iterator[str]:
    """Run `python app.py` (with these extra environment variables) on a free loopback port; yields its base URL
    and stops it afterwards."""
    process, url = start_space(log, timeout, **variables)
    try:
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# Browser tests ---------------------------------------------------------------------------------------------------

TIMEOUT_MS = 45_000


def chromium() -> Iterator[Browser]:
    """Debian's Chromium under Playwright, for a module's `browser` fixture."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=list(CHROMIUM_ARGS))
        yield browser
        browser.close()


def open_page(browser: Browser, url: str, viewport: ViewportSize) -> Page:
    """A new browser context (a new Gradio session) with the Space loaded and its first episode shown."""
    page = browser.new_context(viewport=viewport).new_page()
    page.set_default_timeout(TIMEOUT_MS)
    expect.set_options(timeout=TIMEOUT_MS)
    page.goto(url)
    expect(page.locator("#aaos-stat-step")).to_have_text(re.compile(r"^0 / \d+$"))
    return page


def _shown_title(label: str) -> str:
    """A task's or scenario's title from its dropdown label ("Title (medium, 30 steps)", "Title (holdout)")."""
    return label.rsplit(" (", 1)[0]


def _agent_description(label: str) -> str:
    """The start of what the Space says of the agent picked by this label (or why it cannot run here)."""
    return agents.describe(dict(agents.AGENTS)[label])[0][:40]


SERVER_ANSWERS: dict[str, tuple[str, Callable[[str], str]]] = {
    "aaos-policy": ("#aaos-agent-help", _agent_description),  # it also opens Model settings, re-rendering them
    "aaos-role": ("#aaos-action-help", lambda label: f"({label})"),
    "aaos-action": ("#aaos-action-help", lambda label: f"{label} ("),
    "aaos-task": ("#aaos-status", _shown_title),
    "aaos-scenario": ("#aaos-status", _shown_title),
}
"""For the dropdowns whose choice the server answers: where its answer shows, and the text that says it came."""


def pick(page: Page, elem_id: str, option: str) -> None:
    """Choose an option of a Gradio dropdown by its shown label; for a choice the server answers (the agent, the
    role, the action, the task, the scenario), wait for that answer, so that the next event starts from what it
    set."""
    page.locator(f"#{elem_id} input").click()
    page.get_by_role("option", name=option, exact=True).click()
    expect(page.locator(f"#{elem_id} input")).to_have_value(option)
    if elem_id in SERVER_ANSWERS:
        where, text = SERVER_ANSWERS[elem_id]
        expect(page.locator(where)).to_contain_text(text(option))


def set_delay(page: Page, seconds: float) -> None:
    """Set the seconds between an agent run's steps."""
    box = page.locator("#aaos-delay input[type=number]")
    box.fill(str(seconds))
    box.press("Enter")
    expect(box).to_have_value(str(seconds))
