"""A support agent cancels a pending job and discards dead ones in headless Chromium.

Screenshots go to test-artifacts/; with UPDATE_DOCS_SCREENSHOT=1 they also replace
docs/admin-cancel-job.png and docs/admin-discard-dead.png (the README's).
"""

from __future__ import annotations

from datetime import timedelta

from django.urls import reverse

from jobs.models import Job, JobStatus
from tests.admin.support import make_dead_job, make_staff, support_group
from tests.browser.conftest import BROWSER
from tests.browser.pages import log_in, shoot
from tests.factories import db_now, make_job, make_task

pytestmark = BROWSER


def test_support_agent_cancels_a_pending_job_from_its_page(live_server, page):
    make_staff("agent", groups=(support_group(),))
    job = make_job(make_task(tenant_id="acme", name="Hourly stock sync"), scheduled_at=db_now() + timedelta(hours=1))
    url = live_server.url + reverse("admin:jobs_job_change", args=[job.pk])

    log_in(page, url)
    page.wait_for_selector("#cancel-form")
    shoot(page, "cancel-job")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#cancel-form button")
    page.wait_for_url("**/admin/jobs/job/")

    assert f"Job {job.pk} cancelled." in page.locator("ul.messagelist").inner_text()
    assert Job.objects.get(pk=job.pk).status == JobStatus.CANCELLED


def test_support_agent_discards_the_dead_jobs_of_a_tenant_in_bulk(live_server, page):
    make_staff("agent", groups=(support_group(),))
    acme, globex = make_task(tenant_id="acme"), make_task(tenant_id="globex")
    acme_dead = [make_dead_job(acme, scheduled_at=acme.next_run_at - timedelta(minutes=n)) for n in range(3)]
    globex_dead = make_dead_job(globex)
    url = live_server.url + reverse("admin:jobs_deadjob_changelist") + "?tenant=acme"

    log_in(page, url)
    page.check("#action-toggle")
    page.select_option("select[name=action]", "discard_selected")
    shoot(page, "discard-dead")
    page.click("button[name=index]")
    page.wait_for_url("**tenant=acme**")

    assert "Discarded 3; already gone 0; no longer dead 0 (of 3 tried)." in page.locator("ul.messagelist").inner_text()
    assert page.locator("#result_list").count() == 0  # the tenant's DLQ is empty now
    assert {Job.objects.get(pk=job.pk).status for job in acme_dead} == {JobStatus.CANCELLED}
    assert Job.objects.get(pk=globex_dead.pk).status == JobStatus.DEAD
