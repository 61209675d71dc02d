"""Headless Chromium (Debian's package) for the browser tests: the `page` fixture and where screenshots go."""

from __future__ import annotations

from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

# Each browser test module sets `pytestmark = BROWSER`.
BROWSER = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium at /usr/bin/chromium (.ci/run)"),
]


@pytest.fixture
def page(live_server, settings, monkeypatch):
    """A Chromium page on the live server (plain http, so cookies must not require https)."""
    from playwright.sync_api import sync_playwright

    settings.SESSION_COOKIE_SECURE = False
    settings.CSRF_COOKIE_SECURE = False
    # Playwright's sync API keeps an event loop in this thread; the test's own ORM calls are still synchronous.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1680, "height": 960})
            page.set_default_timeout(15_000)
            yield page
        finally:
            browser.close()
