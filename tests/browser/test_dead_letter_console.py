"""A support agent uses the dead-letter console in headless Chromium (Debian's package).

Screenshots go to test-artifacts/ (git-ignored). With UPDATE_DOCS_SCREENSHOT=1
the console's screenshot also replaces docs/admin-dlq.png (the README's).
"""

from __future__ import annotations

import os

from django.urls import reverse

from jobs.models import Job, JobStatus
from tests.admin.support import PASSWORD, make_dead_job, make_staff, support_group
from tests.browser.conftest import ARTIFACTS, BROWSER, ROOT
from tests.factories import make_task

pytestmark = BROWSER


def result_ids(page) -> list[str]:
    return [text.strip() for text in page.locator("#result_list tbody th a").all_inner_texts()]


def test_support_agent_filters_by_tenant_retries_one_job_and_sees_it_leave_the_dead_list(live_server, page):
    make_staff("agent", groups=(support_group(),))
    acme = make_task(
        tenant_id="acme",
        name="Nightly invoice export",
        http_url="https://acme.example/hooks/invoices",
        http_headers={"Content-Type": "application/json", "X-Api-Key": "acme-live-key-123"},
        http_body='{"period": "daily", "signing_secret": "shh-456"}',
        secret_ref="acme-invoices-hmac",
    )
    globex = make_task(tenant_id="globex", name="Hourly stock sync")
    acme_jobs = [
        make_dead_job(acme, http_status=503, error="HTTP 503 from the endpoint"),
        make_dead_job(acme, http_status=None, error="timeout after 30s"),
    ]
    globex_job = make_dead_job(globex, http_status=404, error="HTTP 404 from the endpoint")
    changelist = live_server.url + reverse("admin:jobs_deadjob_changelist")

    page.goto(changelist)
    assert "/admin/login/" in page.url
    page.fill("#id_username", "agent")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(changelist)
    assert sorted(result_ids(page)) == sorted(str(job.pk) for job in [*acme_jobs, globex_job])

    page.fill('input[name="tenant"]', "acme")
    page.press('input[name="tenant"]', "Enter")
    page.wait_for_url("**tenant=acme**")
    assert sorted(result_ids(page)) == sorted(str(job.pk) for job in acme_jobs)
    page.screenshot(path=str(ARTIFACTS / "dlq-filtered.png"), full_page=True)
    if os.environ.get("UPDATE_DOCS_SCREENSHOT") == "1":
        page.screenshot(path=str(ROOT / "docs" / "admin-dlq.png"))

    retried = acme_jobs[0]
    page.click(f"#result_list a:text-is('{retried.pk}')")
    page.wait_for_selector("#retry-form")
    detail = page.content()
    assert "HTTP 503 from the endpoint" in detail and "acme-invoices-hmac" in detail
    assert "acme-live-key-123" not in detail and "shh-456" not in detail
    page.screenshot(path=str(ARTIFACTS / "dlq-job.png"), full_page=True)
    page.click("#retry-form button")
    page.wait_for_url("**tenant=acme**")

    assert f"Job {retried.pk} requeued." in page.locator("ul.messagelist").inner_text()
    assert result_ids(page) == [str(acme_jobs[1].pk)]
    page.screenshot(path=str(ARTIFACTS / "dlq-after-retry.png"), full_page=True)
    assert Job.objects.get(pk=retried.pk).status == JobStatus.PENDING
    assert Job.objects.get(pk=globex_job.pk).status == JobStatus.DEAD
