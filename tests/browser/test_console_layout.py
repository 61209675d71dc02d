"""The console's lists and headers at a 1400 px wide window, measured in headless Chromium.

Screenshots go to test-artifacts/; with UPDATE_DOCS_SCREENSHOT=1 the task list's
also replaces docs/admin-tasks.png (the support-console reference's).
"""

from __future__ import annotations

from django.urls import reverse

from tasks.models import TaskLabel, TaskStatus
from tests.admin.support import make_dead_job, make_staff, support_group
from tests.browser.conftest import BROWSER
from tests.browser.pages import log_in, shoot
from tests.factories import make_job, make_task

pytestmark = BROWSER

LONG_TENANT = "acme_corporation_production_europe_west_1"  # no hyphen: nowhere to break


def busy_tenant() -> None:
    """Tasks and jobs with the longest values support meets: names, tenant ids, URLs, errors, labels."""
    labels = {"env": "production", "team": "billing-and-invoicing", "app.example.com/owner": "finance"}
    task = make_task(
        tenant_id=LONG_TENANT,
        name="Nightly invoice export for the finance team, all regions, with retries and reminders",
        http_url="https://hooks.acme-corporation.example/very/long/path/to/invoices/export?period=daily&format=json",
        labels=labels,
        status=TaskStatus.PAUSED,
        paused_reason="paused automatically after 10 dead jobs in a row",
    )
    TaskLabel.objects.bulk_create(
        TaskLabel(task=task, tenant_id=task.tenant_id, key=key, value=value) for key, value in labels.items()
    )
    make_task(
        tenant_id="globex", name="Hourly stock sync", cron_expression="*/15 1-5 * * MON-FRI", timezone="Europe/Paris"
    )
    make_dead_job(task, error="HTTP 503 from https://hooks.acme-corporation.example/very/long/path/to/invoices/export")
    make_job(task)


CLIPPED = """() => {
  const results = document.querySelector('#changelist .results');
  const right = results.getBoundingClientRect().right;
  const cut = [...document.querySelectorAll('#result_list thead th')]
    .filter(th => th.getBoundingClientRect().right > right + 1)
    .map(th => th.innerText.trim());
  return {scroll: results.scrollWidth, client: results.clientWidth, cut: cut};
}"""

TEXT_LINES = """(selector) => {
  const header = [...document.querySelectorAll(selector)].find(th => th.innerText.trim().toLowerCase() === 'dead jobs');
  const range = document.createRange();
  range.selectNodeContents(header);
  return new Set([...range.getClientRects()].map(rect => Math.round(rect.top))).size;
}"""


def test_the_task_and_job_lists_fit_a_1400px_window(live_server, page):
    make_staff("agent", groups=(support_group(),))
    busy_tenant()
    page.set_viewport_size({"width": 1400, "height": 900})
    log_in(page, live_server.url + "/admin/")

    measured = {}
    for name in ("tasks_task", "jobs_job", "jobs_deadjob"):
        page.goto(live_server.url + reverse(f"admin:{name}_changelist"))
        measured[name] = page.evaluate(CLIPPED)
        if name == "tasks_task":
            shoot(page, "tasks")

    clipped = {
        name: figures for name, figures in measured.items() if figures["cut"] or figures["scroll"] > figures["client"]
    }
    assert clipped == {}


def test_the_dead_jobs_header_reads_on_one_line(live_server, page):
    make_staff("agent", groups=(support_group(),))
    busy_tenant()
    page.set_viewport_size({"width": 1400, "height": 900})
    log_in(page, live_server.url + "/admin/")

    on_index = page.evaluate(TEXT_LINES, "#dlq-summary th")
    page.goto(live_server.url + reverse("admin:jobs_deadjob_changelist"))
    on_list = page.evaluate(TEXT_LINES, "#dlq-summary th")

    assert (on_index, on_list) == (1, 1)
