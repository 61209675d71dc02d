"""What the console's browser tests do alike: log in as a staff user, save a screenshot."""

from __future__ import annotations

import os

from tests.admin.support import PASSWORD
from tests.browser.conftest import ARTIFACTS, ROOT


def log_in(page, url: str, username: str = "agent") -> None:
    page.goto(url)
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(url)


def shoot(page, name: str) -> None:
    """To test-artifacts/; with UPDATE_DOCS_SCREENSHOT=1 also over docs/admin-<name>.png (the README's)."""
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    if os.environ.get("UPDATE_DOCS_SCREENSHOT") == "1":
        page.screenshot(path=str(ROOT / "docs" / f"admin-{name}.png"))
