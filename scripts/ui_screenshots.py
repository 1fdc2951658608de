"""Screenshots of every tab of the Space for the documentation, at a desktop's 1280 x 800 and a phone's 390 x 844:
`python scripts/ui_screenshots.py [OUT]` (default docs/images) runs `python app.py` on a loopback port and drives it
with Playwright and Debian's Chromium, as the browser tests do (tests/ui_fixtures.py).

Before the shots the champion plays an episode to its end (so that the World, Reward and Logs tabs and the report
have something to show) and the Benchmark runs its default plan; each shot is the window with the tab's content at
its top.
"""

from __future__ import annotations

import sys
from pathlib import Path

from PIL import Image
from playwright.sync_api import Page, ViewportSize, expect

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from ui_fixtures import chromium, open_page, pick, running_space, set_delay  # noqa: E402

SIZES: dict[str, ViewportSize] = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
TABS: tuple[str, ...] = ("Play", "World", "Reward", "Logs", "Benchmark", "Training", "Replay", "Arena")
TASK = "Organisation simulation (easy, 20 steps)"
STARTUP_S = 600
"""How long the Space may take to answer on a busy machine."""
WAIT_MS = 180_000


def prepare(page: Page) -> None:
    """The champion plays the episode to its end; the Benchmark runs its default plan."""
    pick(page, "aaos-task", TASK)
    set_delay(page, 0.1)
    page.locator("#aaos-run").click()
    expect(page.locator("#aaos-stat-state")).to_contain_text("done", timeout=WAIT_MS)
    page.get_by_role("tab", name="Benchmark", exact=True).click()
    page.locator("#aaos-bench-run").click()
    expect(page.locator("table#aaos-board")).to_be_visible(timeout=WAIT_MS)


def shoot(page: Page, tab: str, path: Path) -> None:
    """The window with `tab`'s content at its top (the Play tab: the page's top, with the status and the form)."""
    page.get_by_role("tab", name=tab, exact=True).click()
    page.wait_for_timeout(1500)  # charts draw after the tab shows
    if tab == "Play":
        page.evaluate("window.scrollTo(0, 0)")
    else:
        page.locator("#aaos-tabs").evaluate("element => element.scrollIntoView()")
    page.screenshot(path=str(path))
    Image.open(path).save(path, optimize=True)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    space = running_space(out / "ui_screenshots_server.log", timeout=STARTUP_S)
    url = next(space)
    browsers = chromium()
    browser = next(browsers)
    try:
        for size, viewport in SIZES.items():
            page = open_page(browser, url, viewport)
            prepare(page)
            for tab in TABS:
                shoot(page, tab, out / f"space_{tab.lower()}_{size}.png")
            page.context.close()
    finally:
        next(browsers, None)
        next(space, None)
        (out / "ui_screenshots_server.log").unlink(missing_ok=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "images")
