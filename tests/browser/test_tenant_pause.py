"""A support agent pauses a whole tenant and resumes it in headless Chromium.

Screenshots go to test-artifacts/; with UPDATE_DOCS_SCREENSHOT=1 they also replace
docs/admin-pause-tenant.png and docs/admin-paused-tenant.png (the README's).
"""

from __future__ import annotations

from datetime import timedelta

from django.urls import reverse

from tasks.models import TenantLimits
from tests.admin.support import make_staff, support_group
from tests.browser.conftest import BROWSER
from tests.browser.pages import log_in, shoot
from tests.factories import db_now, make_job, make_task

pytestmark = BROWSER


def test_support_agent_pauses_a_tenant_then_resumes_it(live_server, page):
    make_staff("agent", groups=(support_group(),))
    acme = make_task(tenant_id="acme", name="Hourly stock sync")
    for n in range(3):
        make_job(acme, scheduled_at=db_now() - timedelta(minutes=n + 1))
    TenantLimits.objects.create(tenant_id="globex", max_running_jobs=20, note="slow endpoints")
    url = live_server.url + reverse("admin:tasks_tenantlimits_changelist")

    log_in(page, url)
    page.click("#pause-tenant-link")
    page.wait_for_selector("#pause-tenant-form")
    page.fill("#id_tenant_id", "acme")
    page.fill("#id_reason", "INC-4711: their endpoint answers 500 to everything, tenant asked us to hold")
    shoot(page, "pause-tenant")
    page.click("#pause-tenant-form input[type=submit]")
    page.wait_for_url("**/admin/tasks/tenantlimits/?q=acme")

    assert page.locator("ul.messagelist").inner_text().startswith("Paused tenant acme")
    assert "PAUSED" in page.locator("#result_list").inner_text()
    assert TenantLimits.objects.get(tenant_id="acme").paused
    page.goto(url)  # every tenant's row, the paused one marked
    shoot(page, "paused-tenant")

    page.goto(live_server.url + reverse("admin:jobs_dashboard"))
    assert "acme" in page.locator("#panel-paused").inner_text()
    assert "INC-4711" in page.locator("#panel-paused").inner_text()

    page.click("#panel-paused a")  # the tenant's limits page
    page.wait_for_selector("#resume-tenant-form")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#resume-tenant-form button")
    page.wait_for_url("**/admin/tasks/tenantlimits/?q=acme")

    assert page.locator("ul.messagelist").inner_text().startswith("Resumed tenant acme")
    assert not TenantLimits.objects.get(tenant_id="acme").paused
