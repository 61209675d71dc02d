"""A support agent watches the queue dashboard in headless Chromium: it refreshes itself without a reload.

Screenshots go to test-artifacts/; with UPDATE_DOCS_SCREENSHOT=1 the dashboard's
also replaces docs/admin-dashboard.png (the README's).
"""

from __future__ import annotations

import os
from datetime import timedelta

from django.urls import reverse

from console import dashboard_page
from jobs.models import JobStatus
from tests.admin.support import PASSWORD, make_dead_job, make_staff, support_group
from tests.browser.conftest import ARTIFACTS, BROWSER, ROOT
from tests.factories import db_now, make_job, make_task

pytestmark = BROWSER


def log_in(page, live_server, url: str, username: str) -> None:
    page.goto(url)
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(url)


def fill_a_busy_queue() -> object:
    acme, globex, initech = (make_task(tenant_id=name, name=f"{name} sync") for name in ("acme", "globex", "initech"))
    now = db_now()
    for minute in range(12):
        for n in range(3 + (minute * 7) % 11):
            due = now - timedelta(minutes=minute, seconds=n + 2)
            make_job(
                acme if n % 2 else globex,
                scheduled_at=due,
                next_attempt_at=due,
                status=JobStatus.SUCCEEDED if n % 5 else JobStatus.DEAD,
                attempt=1,
                started_at=due + timedelta(milliseconds=(minute * 350 + n * 90) % 2500),
                finished_at=due + timedelta(seconds=1),
            )
    for n in range(7):
        make_job(
            initech,
            scheduled_at=now - timedelta(hours=2, minutes=n),
            status=JobStatus.RUNNING,
            attempt=1,
            worker_id=f"executor-{n % 3}",
            started_at=now - timedelta(seconds=n),
            lease_expires_at=now + timedelta(seconds=40 - n * 9),
        )
    for hours in (1, 3, 3, 7, 12):
        make_dead_job(initech, died_ago=timedelta(hours=hours, minutes=5))
    make_job(globex, scheduled_at=now - timedelta(seconds=42))
    return acme


def test_the_dashboard_refreshes_its_figures_without_reloading(live_server, page, monkeypatch):
    monkeypatch.setattr(dashboard_page, "REFRESH_SECONDS", 1)
    make_staff("agent", groups=(support_group(),))
    acme = fill_a_busy_queue()
    url = live_server.url + reverse("admin:jobs_dashboard")

    log_in(page, live_server, url, "agent")
    assert page.inner_text("#due-now") == "1"
    assert "waited" in page.inner_text("#oldest-due")
    assert page.locator("#panel-leases tr[data-worker]").count() == 3
    assert page.locator("#panel-dead tr[data-tenant]").first.get_attribute("data-tenant") == "globex"
    assert page.locator("#dashboard-panels svg").count() >= 3
    page.screenshot(path=str(ARTIFACTS / "dashboard.png"), full_page=True)
    if os.environ.get("UPDATE_DOCS_SCREENSHOT") == "1":
        page.screenshot(path=str(ROOT / "docs" / "admin-dashboard.png"), full_page=True)

    page.evaluate("window.notReloaded = true")
    make_job(acme, scheduled_at=db_now() - timedelta(seconds=5))
    page.wait_for_function("document.querySelector('#due-now').textContent.trim() === '2'", timeout=10_000)
    assert page.evaluate("window.notReloaded") is True

    page.click("#panel-status a[data-status=running]")
    page.wait_for_url("**status__exact=running**")
    assert page.locator("#result_list tbody tr").count() == 7
