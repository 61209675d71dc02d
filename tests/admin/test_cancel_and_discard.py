"""Cancel (pending jobs, the job list) and discard (dead jobs, the DLQ) in the admin: guarded, permitted, audited."""

from __future__ import annotations

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.models import CHANGE, LogEntry
from django.urls import reverse

from jobs.models import Job, JobStatus
from jobs.services import CANCELLED_BY_SUPPORT
from tests.admin.support import make_dead_job, make_staff
from tests.factories import make_job, make_task

pytestmark = pytest.mark.django_db

JOBS = reverse("admin:jobs_job_changelist")
DEAD = reverse("admin:jobs_deadjob_changelist")


def status_of(job) -> str:
    return Job.objects.values_list("status", flat=True).get(pk=job.pk)


def act(client, url, action, jobs, **extra):
    data = {"action": action, ACTION_CHECKBOX_NAME: [str(job.pk) for job in jobs], **extra}
    return client.post(url, data, follow=True)


def messages_of(response) -> list[str]:
    return [str(message) for message in response.context["messages"]]


def audit(job) -> list[str]:
    return list(
        LogEntry.objects.filter(object_id=str(job.pk), action_flag=CHANGE).values_list("change_message", flat=True)
    )


def test_support_cancels_a_pending_job_from_its_page_and_it_is_audited(support_user, client_as):
    job = make_job(make_task())
    client = client_as(support_user)
    page = client.get(reverse("admin:jobs_job_change", args=[job.pk])).content.decode()
    assert 'id="cancel-form"' in page

    response = client.post(reverse("admin:jobs_job_cancel", args=[job.pk]), follow=True)

    assert f"Job {job.pk} cancelled." in messages_of(response)
    assert status_of(job) == JobStatus.CANCELLED
    assert Job.objects.get(pk=job.pk).error == CANCELLED_BY_SUPPORT
    assert [entry for entry in audit(job)] == ["Cancelled from the support console: will not run"]
    assert LogEntry.objects.get(object_id=str(job.pk)).user == support_user


def test_cancelling_a_job_that_started_meanwhile_changes_nothing(support_user, client_as):
    job = make_job(make_task(), status=JobStatus.RUNNING, attempt=1, worker_id="exec-1")

    response = client_as(support_user).post(reverse("admin:jobs_job_cancel", args=[job.pk]), follow=True)

    assert f"Job {job.pk} is no longer pending: nothing to do." in messages_of(response)
    assert status_of(job) == JobStatus.RUNNING and audit(job) == []


def test_the_cancel_button_shows_only_on_a_pending_job(support_user, client_as):
    job = make_job(make_task(), status=JobStatus.SUCCEEDED, attempt=1)
    page = client_as(support_user).get(reverse("admin:jobs_job_change", args=[job.pk])).content.decode()
    assert 'id="cancel-form"' not in page


def test_bulk_cancel_counts_each_outcome_and_audits_only_what_it_cancelled(support_user, client_as):
    task = make_task()
    pending = [make_job(task, scheduled_at=task.next_run_at.replace(minute=n)) for n in range(3)]
    running = make_job(task, scheduled_at=task.next_run_at.replace(minute=10), status=JobStatus.RUNNING, attempt=1)

    response = act(client_as(support_user), JOBS, "cancel_selected", [*pending, running])

    assert "Cancelled 3; already gone 0; no longer pending 1 (of 4 tried)." in messages_of(response)
    assert {status_of(job) for job in pending} == {JobStatus.CANCELLED}
    assert status_of(running) == JobStatus.RUNNING
    assert LogEntry.objects.filter(action_flag=CHANGE).count() == 3


def test_bulk_cancel_on_every_match_of_a_filter_stops_at_the_limit(support_user, client_as, settings):
    settings.ADMIN_BULK_RETRY_LIMIT = 2
    task = make_task(tenant_id="acme")
    jobs = [make_job(task, scheduled_at=task.next_run_at.replace(minute=n)) for n in range(3)]
    other = make_job(make_task(tenant_id="globex"))

    response = act(client_as(support_user), JOBS + "?q=acme", "cancel_selected", jobs[:1], select_across="1")

    assert "Cancelled 2" in messages_of(response)[0] and "run it again for the rest" in messages_of(response)[0]
    assert sorted(status_of(job) for job in jobs) == ["cancelled", "cancelled", "pending"]
    assert status_of(other) == JobStatus.PENDING


def test_support_discards_a_dead_job_from_its_page(support_user, client_as):
    job = make_dead_job(make_task(), error="HTTP 410 gone for good")
    client = client_as(support_user)
    assert 'id="discard-form"' in client.get(reverse("admin:jobs_deadjob_change", args=[job.pk])).content.decode()

    response = client.post(reverse("admin:jobs_deadjob_discard", args=[job.pk]), follow=True)

    assert f"Job {job.pk} discarded." in messages_of(response)
    job.refresh_from_db()
    assert (job.status, job.error) == (JobStatus.CANCELLED, "HTTP 410 gone for good")  # keeps why it died
    assert audit(job) == ["Discarded from the dead-letter console: left the DLQ for good"]
    assert str(job.pk) not in client.get(DEAD).content.decode()


def test_discarding_a_job_retried_meanwhile_changes_nothing(support_user, client_as):
    job = make_job(make_task())  # pending: retried by someone else since the page was drawn

    response = client_as(support_user).post(reverse("admin:jobs_deadjob_discard", args=[job.pk]), follow=True)

    assert f"Job {job.pk} is no longer dead: nothing to do." in messages_of(response)
    assert status_of(job) == JobStatus.PENDING


def test_bulk_discard_reports_jobs_gone_since_the_page_was_drawn(support_user, client_as):
    task = make_task()
    dead = [make_dead_job(task, scheduled_at=task.next_run_at.replace(minute=n)) for n in range(2)]
    gone = make_dead_job(task, scheduled_at=task.next_run_at.replace(minute=5))
    Job.objects.filter(pk=gone.pk).delete()  # archived meanwhile

    response = act(client_as(support_user), DEAD, "discard_selected", [*dead, gone])

    assert "Discarded 2; already gone 1; no longer dead 0 (of 3 tried)." in messages_of(response)
    assert {status_of(job) for job in dead} == {JobStatus.CANCELLED}


def test_read_only_staff_can_neither_cancel_nor_discard(readonly_staff, client_as):
    pending, dead = make_job(make_task()), make_dead_job(make_task())
    client = client_as(readonly_staff)
    assert client.post(reverse("admin:jobs_job_cancel", args=[pending.pk])).status_code == 403
    assert client.post(reverse("admin:jobs_deadjob_discard", args=[dead.pk])).status_code == 403
    act(client, JOBS, "cancel_selected", [pending])
    act(client, DEAD, "discard_selected", [dead])
    assert (status_of(pending), status_of(dead)) == (JobStatus.PENDING, JobStatus.DEAD)
    page = client.get(reverse("admin:jobs_deadjob_change", args=[dead.pk])).content.decode()
    assert 'id="discard-form"' not in page


def test_a_retrier_without_the_discard_permission_cannot_discard(client_as):
    agent = make_staff("retrier", perms=("jobs.view_deadjob", "jobs.view_job", "jobs.retry_dead_jobs"))
    dead = make_dead_job(make_task())
    assert client_as(agent).post(reverse("admin:jobs_deadjob_discard", args=[dead.pk])).status_code == 403
    assert status_of(dead) == JobStatus.DEAD


def test_staff_who_may_cancel_or_discard_but_not_view_the_jobs_can_do_neither(client_as):
    # Like a retry: changing a job needs the permission to see it too.
    blind = make_staff("blind-agent", perms=("jobs.cancel_pending_jobs", "jobs.discard_dead_jobs"))
    pending, dead = make_job(make_task()), make_dead_job(make_task())
    client = client_as(blind)

    assert client.post(reverse("admin:jobs_job_cancel", args=[pending.pk])).status_code == 403
    assert client.post(reverse("admin:jobs_deadjob_discard", args=[dead.pk])).status_code == 403
    assert act(client, JOBS, "cancel_selected", [pending]).status_code == 403
    assert act(client, DEAD, "discard_selected", [dead]).status_code == 403
    assert (status_of(pending), status_of(dead)) == (JobStatus.PENDING, JobStatus.DEAD)
    assert LogEntry.objects.count() == 0


def test_cancel_takes_only_post(support_user, client_as):
    job = make_job(make_task())
    assert client_as(support_user).get(reverse("admin:jobs_job_cancel", args=[job.pk])).status_code == 405
    assert status_of(job) == JobStatus.PENDING


def test_a_malformed_id_is_not_found(support_user, client_as):
    assert client_as(support_user).post(reverse("admin:jobs_job_cancel", args=["nope"])).status_code == 404
