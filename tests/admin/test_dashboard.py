"""The queue dashboard: its figures on the real database, its page, its refresh fragment, who may see it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

from console import charts
from jobs.models import JobStatus
from jobs.queue import dashboard
from tasks.models import TenantLimits
from tasks.pausing import tenant_pause
from tests.admin.support import make_dead_job, make_staff
from tests.factories import db_now, make_job, make_task

pytestmark = pytest.mark.django_db

URL = "/admin/jobs/job/dashboard/"


def _finished(task, *, status, ago: timedelta, late: timedelta = timedelta(0), **fields):
    now = db_now()
    due = now - ago - timedelta(seconds=5)
    return make_job(
        task,
        scheduled_at=due,
        next_attempt_at=due,
        status=status,
        attempt=1,
        started_at=due + late,
        finished_at=now - ago,
        **fields,
    )


def test_the_url_is_the_admin_route():
    assert reverse("admin:jobs_dashboard") == URL


def test_status_counts_count_each_status_and_stop_at_the_cap():
    task = make_task()
    now = db_now()
    for n in range(3):
        make_job(task, scheduled_at=now - timedelta(minutes=n + 1))
    make_dead_job(task)
    for n in range(2):
        make_job(task, scheduled_at=now - timedelta(hours=n + 1), status=JobStatus.CANCELLED)
    make_job(task, scheduled_at=now - timedelta(days=1), status=JobStatus.SKIPPED, error="overlap:skip")
    assert dashboard.status_counts() == {
        "pending": 3,
        "running": 0,
        "succeeded": 0,
        "dead": 1,
        "cancelled": 2,
        "skipped": 1,
    }
    assert dashboard.status_counts(cap=2)["pending"] == 2


def test_the_backlog_counts_only_due_jobs_and_the_oldest_wait():
    task = make_task()
    now = db_now()
    make_job(task, scheduled_at=now - timedelta(seconds=90), priority=7)
    make_job(task, scheduled_at=now - timedelta(seconds=10), priority=0)
    make_job(task, scheduled_at=now + timedelta(minutes=10), priority=0)  # not due yet
    backlog = dashboard.due_backlog()
    assert backlog.due == 2 and not backlog.capped
    assert 89 <= backlog.oldest_due_seconds < 120
    capped = dashboard.due_backlog(cap=1)
    assert capped.due == 2 and capped.capped  # each level stops at 1


def test_an_empty_queue_has_no_oldest_wait():
    task = make_task()
    make_job(task, scheduled_at=db_now() + timedelta(hours=1))
    backlog = dashboard.due_backlog()
    assert backlog.due == 0 and backlog.oldest_due_seconds is None


def test_leases_are_grouped_by_worker_with_the_expired_ones_counted():
    task = make_task()
    now = db_now()
    for n, (worker, lease) in enumerate(
        [("exec-a", timedelta(seconds=60)), ("exec-a", timedelta(seconds=-5)), ("exec-b", timedelta(seconds=30))]
    ):
        make_job(
            task,
            scheduled_at=now - timedelta(minutes=n + 1),
            status=JobStatus.RUNNING,
            attempt=1,
            worker_id=worker,
            started_at=now,
            lease_expires_at=now + lease,
        )
    workers, scanned = dashboard.leases_by_worker()
    assert scanned == 3
    assert [(w.worker_id, w.held, w.expired) for w in workers] == [("exec-a", 2, 1), ("exec-b", 1, 0)]


def test_minutes_count_finished_jobs_and_their_claim_lateness():
    task = make_task()
    _finished(task, status=JobStatus.SUCCEEDED, ago=timedelta(seconds=10), late=timedelta(seconds=3))
    _finished(task, status=JobStatus.SUCCEEDED, ago=timedelta(seconds=20), late=timedelta(seconds=-2))
    _finished(task, status=JobStatus.DEAD, ago=timedelta(minutes=2, seconds=10), late=timedelta(seconds=1))
    _finished(task, status=JobStatus.SUCCEEDED, ago=timedelta(minutes=30))  # outside the window
    minutes = dashboard.recent_minutes()
    assert [m.minutes_ago for m in minutes] == list(reversed(range(dashboard.MINUTES)))
    by_ago = {m.minutes_ago: m for m in minutes}
    assert (by_ago[0].succeeded, by_ago[0].dead) == (2, 0)
    assert by_ago[0].late_max_ms == 3000  # a job claimed ahead of its time counts 0, not -2000
    assert sorted([by_ago[0].late_p50_ms, by_ago[0].late_max_ms]) == [0, 3000]
    assert (by_ago[2].succeeded, by_ago[2].dead, by_ago[2].late_max_ms) == (0, 1, 1000)
    assert sum(m.succeeded + m.dead for m in minutes) == 3


def test_a_minute_past_the_cap_is_estimated_from_its_rate():
    assert dashboard.finished_count(40, None, cap=1000) == (40, False)
    # 1000 jobs in the newest 6 s of the minute: about 10,000 in the minute.
    assert dashboard.finished_count(1000, 6_000_000, cap=1000) == (10_000, True)
    assert dashboard.finished_count(1000, 0, cap=1000) == (1000, False)


def test_a_capped_minute_is_marked_estimated():
    task = make_task()
    for n in range(3):
        _finished(task, status=JobStatus.SUCCEEDED, ago=timedelta(seconds=5 + n), late=timedelta(0))
    minute = dashboard.recent_minutes(cap=2)[-1]
    assert minute.estimated and minute.succeeded >= 2


def test_dead_jobs_per_tenant_per_hour_most_first():
    acme, globex = make_task(tenant_id="acme"), make_task(tenant_id="globex")
    for n in range(3):
        make_dead_job(acme, died_ago=timedelta(hours=n, minutes=5))
    make_dead_job(globex, died_ago=timedelta(minutes=10))
    make_dead_job(globex, died_ago=timedelta(hours=30))  # older than the window
    series, scanned = dashboard.dead_by_tenant_hour()
    assert scanned == 4
    assert [(s.tenant_id, s.total) for s in series] == [("acme", 3), ("globex", 1)]
    assert series[0].per_hour[-3:] == [1, 1, 1] and len(series[0].per_hour) == dashboard.DEAD_HOURS


def test_paused_tenants_come_longest_paused_first_with_their_held_pending_jobs():
    acme, globex = make_task(tenant_id="acme"), make_task(tenant_id="globex")
    now = db_now()
    for n in range(3):
        make_job(acme, scheduled_at=now - timedelta(minutes=n + 1))
    make_dead_job(acme)
    tenant_pause(tenant_id="acme", paused_by="agent", reason="INC-42")
    tenant_pause(tenant_id="globex", paused_by="agent-2", reason="INC-43")
    TenantLimits.objects.filter(tenant_id="globex").update(paused_at=now + timedelta(seconds=5))
    TenantLimits.objects.create(tenant_id="initech", max_running_jobs=3)  # a row, not paused
    make_job(globex)

    found, count = dashboard.paused_tenants()

    assert count == 2
    assert [(t.tenant_id, t.paused_by, t.reason, t.pending) for t in found] == [
        ("acme", "agent", "INC-42", 3),
        ("globex", "agent-2", "INC-43", 1),
    ]
    shown, count = dashboard.paused_tenants(tenants=1, cap=2)
    assert [t.tenant_id for t in shown] == ["acme"] and shown[0].pending == 2 and count == 2
    assert dashboard.paused_tenants(tenants=1, cap=1)[1] == 1  # counted up to the cap


def test_no_paused_tenant_no_panel(client_as, support_user):
    assert dashboard.paused_tenants() == ([], 0)
    assert 'id="panel-paused"' not in client_as(support_user).get(URL).content.decode()


def test_support_staff_see_the_dashboard_with_its_figures(client_as, support_user):
    task = make_task(tenant_id="acme")
    make_job(task, scheduled_at=db_now() - timedelta(seconds=30))
    make_dead_job(task)
    make_job(task, scheduled_at=db_now() - timedelta(hours=1), status=JobStatus.CANCELLED)
    response = client_as(support_user).get(URL)
    assert response.status_code == 200
    page = response.content.decode()
    assert 'data-status="cancelled">cancelled: 1</a>' in page
    assert 'id="panel-paused"' not in page
    assert 'id="dashboard-panels"' in page and "htmx-2.0.11.min.js" in page
    assert 'hx-trigger="every 5s"' in page
    assert '<span class="dashboard-figure" id="due-now">1</span>' in page
    assert 'data-tenant="acme"' in page and "<svg" in page
    tenant_pause(tenant_id="acme", paused_by="agent", reason="INC-42")
    fragment = client_as(support_user).get(URL, headers={"HX-Request": "true"}).content.decode()
    assert 'data-paused-tenant="acme"' in fragment and "INC-42" in fragment
    assert reverse("admin:tasks_tenantlimits_change", args=["acme"]) in fragment


def test_the_refresh_returns_only_the_panels(client_as, support_user):
    response = client_as(support_user).get(URL, headers={"HX-Request": "true"})
    assert response.status_code == 200
    fragment = response.content.decode().strip()
    assert "{% comment" not in fragment
    assert 'id="dashboard-panels"' in fragment and "<html" not in fragment and "htmx-2.0.11" not in fragment


def test_staff_without_the_view_permission_are_refused(client_as):
    clerk = make_staff("clerk", perms=("tasks.view_task",))
    assert client_as(clerk).get(URL).status_code == 403


def test_anonymous_users_are_sent_to_log_in(client):
    response = client.get(URL)
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_chart_labels_are_escaped():
    markup = charts.horizontal_bars([("<script>x</script>", 3, charts.DEAD)], label="a & b")
    assert "<script>" not in markup and "&lt;script&gt;" in markup and "a &amp; b" in markup
    assert "<svg" in charts.sparkline([0, 2, 1], label="s") and "<polyline" in charts.sparkline([0, 2, 1], label="s")
    assert "<rect" not in charts.stacked_columns([("now", [(0, charts.DEAD, "dead")])], label="empty")
