"""The dead-letter console through Django's test client, on the real database."""

from __future__ import annotations

import itertools
import time
import uuid
from datetime import timedelta

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.test import Client
from django.urls import reverse

from jobs.models import Job, JobStatus
from tasks.models import Task
from tests.admin.support import make_dead_job, make_staff
from tests.factories import make_job, make_task

CHANGELIST = reverse("admin:jobs_deadjob_changelist")
RETRY_MATCHING = reverse("admin:jobs_deadjob_retry_matching")

pytestmark = pytest.mark.django_db


def detail_url(job) -> str:
    return reverse("admin:jobs_deadjob_change", args=[job.pk])


def retry_url(job_or_id) -> str:
    return reverse("admin:jobs_deadjob_retry", args=[getattr(job_or_id, "pk", job_or_id)])


def status_of(job) -> str:
    return Job.objects.values_list("status", flat=True).get(pk=job.pk)


def listed(response) -> set[str]:
    """The job ids on the list page (the result list, not the summary above it)."""
    return {str(job.pk) for job in response.context["cl"].result_list}


def messages_of(response) -> list[str]:
    return [str(message) for message in response.context["messages"]]


def run_action(client, job_ids, **extra):
    data = {"action": "retry_selected", ACTION_CHECKBOX_NAME: [str(job_id) for job_id in job_ids], **extra}
    return client.post(CHANGELIST, data, follow=True)


# --- the list ---------------------------------------------------------------------


def test_console_lists_dead_jobs_with_their_task_names_and_nothing_else(support_user, client_as):
    task = make_task(name="nightly invoice run")
    dead = make_dead_job(task, http_status=502, error="HTTP 502 bad gateway")
    pending = make_job(task, scheduled_at=dead.scheduled_at + timedelta(minutes=1))

    response = client_as(support_user).get(CHANGELIST)

    assert response.status_code == 200
    assert listed(response) == {str(dead.pk)}
    body = response.content.decode()
    assert "nightly invoice run" in body
    assert "HTTP 502 bad gateway" in body
    assert str(pending.pk) not in body


def test_a_dead_job_whose_task_row_is_gone_is_still_listed_and_viewable(support_user, client_as):
    task = make_task()
    job = make_dead_job(task)
    Task.objects.filter(pk=task.pk).delete()  # no FK constraint: the job row stays
    client = client_as(support_user)

    listing = client.get(CHANGELIST)
    detail = client.get(detail_url(job))

    assert listed(listing) == {str(job.pk)}
    assert "(task gone)" in listing.content.decode()
    assert detail.status_code == 200


def test_console_filters_by_tenant(support_user, client_as):
    mine = make_dead_job(make_task(tenant_id="tenant-a"))
    theirs = make_dead_job(make_task(tenant_id="tenant-b"))

    client = client_as(support_user)

    response = client.get(CHANGELIST, {"tenant": "tenant-b"})

    assert listed(response) == {str(theirs.pk)}
    assert listed(client.get(CHANGELIST)) == {str(mine.pk), str(theirs.pk)}  # the filter did the narrowing


def test_console_filters_by_task_and_offers_the_tenants_tasks(support_user, client_as):
    first, second = make_task(name="first hook"), make_task(name="second hook")
    job_one, job_two = make_dead_job(first), make_dead_job(second)
    client = client_as(support_user)

    response = client.get(CHANGELIST, {"task": str(second.pk)})
    offered = client.get(CHANGELIST, {"tenant": "tenant-a"}).content.decode()

    assert listed(response) == {str(job_two.pk)}
    assert listed(client.get(CHANGELIST)) == {str(job_one.pk), str(job_two.pk)}
    assert f"task={first.pk}" in offered and f"task={second.pk}" in offered


def test_a_task_filter_that_is_not_a_uuid_matches_nothing(support_user, client_as):
    job = make_dead_job(make_task())

    client = client_as(support_user)

    response = client.get(CHANGELIST, {"task": "not-a-uuid"})

    assert response.status_code == 200
    assert listed(response) == set()
    assert listed(client.get(CHANGELIST)) == {str(job.pk)}


@pytest.mark.parametrize(
    ("status_class", "expected"),
    [("5xx", "server"), ("4xx", "client"), ("2xx", None), ("none", "timeout")],
)
def test_console_filters_by_http_status_class(support_user, client_as, status_class, expected):
    task = make_task()
    jobs = {
        "server": make_dead_job(task, http_status=503),
        "client": make_dead_job(task, http_status=404),
        "timeout": make_dead_job(task, http_status=None, error="timeout"),
    }

    response = client_as(support_user).get(CHANGELIST, {"http": status_class})

    assert listed(response) == ({str(jobs[expected].pk)} if expected else set())


def test_console_filters_by_age(support_user, client_as):
    task = make_task()
    fresh = make_dead_job(task, died_ago=timedelta(minutes=10))
    old = make_dead_job(task, died_ago=timedelta(days=3), scheduled_at=fresh.scheduled_at - timedelta(days=3))
    client = client_as(support_user)

    last_hour = client.get(CHANGELIST, {"age": "1h"})
    this_week = client.get(CHANGELIST, {"age": "7d"})

    assert listed(last_hour) == {str(fresh.pk)}
    assert listed(this_week) == {str(old.pk)}


def test_search_finds_a_job_by_its_id_its_task_id_or_its_error(support_user, client_as):
    task, other_task = make_task(), make_task()
    job = make_dead_job(task, error="certificate verify failed")
    other = make_dead_job(other_task, error="HTTP 500")
    client = client_as(support_user)

    by_job_id = client.get(CHANGELIST, {"q": str(job.pk)})
    by_task_id = client.get(CHANGELIST, {"q": f" {task.pk} "})
    by_error = client.get(CHANGELIST, {"q": "certificate verify"})

    for response in (by_job_id, by_task_id, by_error):
        assert listed(response) == {str(job.pk)}
    assert str(other.pk) not in listed(client.get(CHANGELIST, {"q": str(job.pk)}))


def test_summary_counts_dead_jobs_per_tenant_and_names_the_oldest(support_user, client_as):
    task_a, task_b = make_task(tenant_id="tenant-a"), make_task(tenant_id="tenant-b")
    oldest = make_dead_job(task_a, died_ago=timedelta(days=2))
    for minutes in (1, 2):
        make_dead_job(task_b, scheduled_at=oldest.scheduled_at + timedelta(minutes=minutes))

    response = client_as(support_user).get(CHANGELIST)

    summary = response.context["dead_summary"]
    assert [(row.tenant_id, row.dead) for row in summary.tenants] == [("tenant-b", 2), ("tenant-a", 1)]
    assert not summary.capped
    assert response.context["oldest_dead_job"].pk == oldest.pk
    assert 'id="oldest-dead-job"' in response.content.decode()


def test_the_admin_index_shows_the_summary_to_those_who_may_see_dead_jobs(support_user, client_as):
    make_dead_job(make_task(tenant_id="tenant-c"))
    tasks_only = make_staff("task-viewer", perms=("tasks.view_task",))

    shown = client_as(support_user).get(reverse("admin:index")).content.decode()
    hidden = client_as(tasks_only).get(reverse("admin:index")).content.decode()

    assert 'id="dlq-summary"' in shown and f"{CHANGELIST}?tenant=tenant-c" in shown
    assert 'id="dlq-summary"' not in hidden and "tenant-c" not in hidden


def test_a_list_longer_than_the_count_cap_says_more_than_the_cap(support_user, client_as, monkeypatch):
    from console.admin_base import CappedCountPaginator

    monkeypatch.setattr(CappedCountPaginator, "cap", 2)
    task = make_task()
    first = make_dead_job(task)
    for minutes in (1, 2):
        make_dead_job(task, scheduled_at=first.scheduled_at + timedelta(minutes=minutes))

    body = client_as(support_user).get(CHANGELIST).content.decode()

    assert "more than 2 dead jobs" in body


# --- the detail page ----------------------------------------------------------------


def test_detail_page_shows_the_request_with_credentials_masked_and_the_response(support_user, client_as):
    task = make_task(secret_ref="billing-webhook-signing")
    job = make_dead_job(
        task,
        request_url="https://hooks.example.com/run?token=url-secret-1&region=eu",
        request_headers={
            "Content-Type": "application/json",
            "Authorization": "Bearer header-secret-2",
            "Cookie": "sid=header-secret-3",
            "X-Api-Key": "header-secret-4",
            "X-Upstream-Password": "header-secret-5",
            "X-Trace": "visible-trace-id",
        },
        request_body='{"invoice": 42, "client_secret": "body-secret-6"}',
        http_status=500,
        response_body="stack trace from the tenant",
    )

    response = client_as(support_user).get(detail_url(job))

    body = response.content.decode()
    assert response.status_code == 200
    for secret in ("url-secret-1", "header-secret-2", "header-secret-3", "header-secret-4", "header-secret-5"):
        assert secret not in body
    assert "body-secret-6" not in body
    for shown in ("visible-trace-id", "region=eu", "&quot;invoice&quot;: 42", "billing-webhook-signing"):
        assert shown in body
    assert "stack trace from the tenant" in body
    assert 'id="retry-form"' in body


def test_detail_page_of_a_job_that_is_not_dead_is_not_in_the_console(support_user, client_as):
    job = make_job(make_task())

    response = client_as(support_user).get(detail_url(job), follow=True)

    assert "doesn\u2019t exist" in " ".join(messages_of(response))


# --- retrying -----------------------------------------------------------------------


def test_support_user_retries_one_job_from_its_page(support_user, client_as):
    job = make_dead_job(make_task())

    response = client_as(support_user).post(retry_url(job), follow=True)

    assert status_of(job) == JobStatus.PENDING
    assert messages_of(response) == [f"Job {job.pk} requeued."]
    assert listed(response) == set()


def test_retrying_from_the_page_keeps_the_list_filters(support_user, client_as):
    job = make_dead_job(make_task(tenant_id="tenant-b"))

    response = client_as(support_user).post(retry_url(job) + "?_changelist_filters=tenant%3Dtenant-b")

    assert response.status_code == 302
    assert response["Location"] == CHANGELIST + "?tenant=tenant-b"


def test_retrying_a_job_that_is_no_longer_dead_or_gone_says_so(support_user, client_as):
    pending = make_job(make_task())
    client = client_as(support_user)

    not_dead = client.post(retry_url(pending), follow=True)
    gone = client.post(retry_url(uuid.uuid4()), follow=True)

    assert messages_of(not_dead) == [f"Job {pending.pk} is no longer dead: nothing to do."]
    assert "already gone" in messages_of(gone)[0]
    assert status_of(pending) == JobStatus.PENDING
    assert LogEntry.objects.count() == 0


def test_the_retry_url_answers_only_post(support_user, client_as):
    job = make_dead_job(make_task())

    response = client_as(support_user).get(retry_url(job))

    assert response.status_code == 405
    assert status_of(job) == JobStatus.DEAD


def test_bulk_action_retries_the_selection_and_counts_each_outcome(support_user, client_as):
    task = make_task()
    first = make_dead_job(task)
    dead = [first] + [make_dead_job(task, scheduled_at=first.scheduled_at + timedelta(minutes=n)) for n in (1, 2)]
    retried_meanwhile = make_dead_job(task, scheduled_at=first.scheduled_at + timedelta(minutes=3))
    Job.objects.filter(pk=retried_meanwhile.pk).update(status=JobStatus.PENDING)
    archived_meanwhile = uuid.uuid4()
    unticked = make_dead_job(task, scheduled_at=first.scheduled_at + timedelta(minutes=4))

    response = run_action(
        client_as(support_user), [job.pk for job in dead] + [retried_meanwhile.pk, archived_meanwhile]
    )

    assert messages_of(response) == ["Requeued 3; already gone 1; no longer dead 1 (of 5 tried)."]
    assert [status_of(job) for job in dead] == [JobStatus.PENDING] * 3
    assert status_of(unticked) == JobStatus.DEAD


def test_every_retried_job_gets_one_audit_log_entry_naming_who_and_which(support_user, client_as):
    task = make_task()
    first = make_dead_job(task)
    dead = [first, make_dead_job(task, scheduled_at=first.scheduled_at + timedelta(minutes=1))]
    not_dead = make_job(task, scheduled_at=first.scheduled_at + timedelta(minutes=2))

    run_action(client_as(support_user), [job.pk for job in dead] + [not_dead.pk])

    entries = LogEntry.objects.order_by("object_id")
    assert sorted(entry.object_id for entry in entries) == sorted(str(job.pk) for job in dead)
    assert {entry.user_id for entry in entries} == {support_user.pk}
    assert {entry.action_flag for entry in entries} == {CHANGE}
    assert {entry.content_type for entry in entries} == {ContentType.objects.get_for_model(Job)}
    assert all(entry.action_time is not None and "requeued" in entry.change_message for entry in entries)


def test_a_bulk_retry_that_fails_midway_requeues_nothing_and_logs_nothing(support_user, client_as, monkeypatch):
    from jobs.queue import support
    from jobs.queue.statements import Statement

    # The retry UPDATE fails after the lock: the one transaction rolls back whole.
    broken = Statement.compile(
        "broken",
        "UPDATE JSON_TABLE({json}, '$[*]' COLUMNS (id CHAR(32) PATH '$[0]')) AS s"
        " STRAIGHT_JOIN jobs AS j ON j.id = UNHEX(s.id) SET j.no_such = 1",
    )
    monkeypatch.setitem(support.STATEMENTS, "retry_dead_jobs", broken)
    jobs = [make_dead_job(make_task()) for _ in range(3)]
    client = client_as(support_user)
    client.raise_request_exception = False

    response = run_action(client, [job.pk for job in jobs])

    assert response.status_code == 500
    assert LogEntry.objects.count() == 0
    assert [status_of(job) for job in jobs] == [JobStatus.DEAD] * 3


def test_retry_needs_the_csrf_token(support_user):
    job = make_dead_job(make_task())
    client = Client(enforce_csrf_checks=True)
    client.force_login(support_user)

    response = client.post(retry_url(job))

    assert response.status_code == 403
    assert status_of(job) == JobStatus.DEAD


def test_bulk_retry_stops_at_the_per_request_limit(support_user, client_as, settings):
    settings.ADMIN_BULK_RETRY_LIMIT = 2
    task = make_task()
    first = make_dead_job(task)
    jobs = [first] + [make_dead_job(task, scheduled_at=first.scheduled_at + timedelta(minutes=n)) for n in (1, 2)]

    response = run_action(client_as(support_user), [job.pk for job in jobs])

    statuses = [status_of(job) for job in jobs]
    assert statuses.count(JobStatus.PENDING) == 2 and statuses.count(JobStatus.DEAD) == 1
    assert "run it again for the rest" in messages_of(response)[0]


def test_bulk_retry_is_paced_by_due_times_not_by_sleeping_in_the_request(support_user, client_as, settings):
    settings.ADMIN_BULK_RETRY_PER_SECOND = 10
    task = make_task()
    first = make_dead_job(task)
    jobs = [first] + [make_dead_job(task, scheduled_at=first.scheduled_at + timedelta(minutes=n)) for n in range(1, 60)]

    started = time.monotonic()
    response = run_action(client_as(support_user), [job.pk for job in jobs])
    took = time.monotonic() - started

    assert messages_of(response) == ["Requeued 60; already gone 0; no longer dead 0 (of 60 tried)."]
    due = sorted(Job.objects.filter(pk__in=[job.pk for job in jobs]).values_list("next_attempt_at", flat=True))
    gaps = [(later - earlier).total_seconds() for earlier, later in itertools.pairwise(due)]
    assert gaps == [pytest.approx(0.1, abs=0.002)] * 59  # 10 a second: the last is due 5.9 s after the first
    assert took < 5.9, "the request waited for the pace instead of scheduling it"
    assert LogEntry.objects.count() == 60


def test_retry_all_matching_retries_only_what_the_filter_matches(support_user, client_as):
    a_jobs = [make_dead_job(make_task(tenant_id="tenant-a")) for _ in range(2)]
    b_job = make_dead_job(make_task(tenant_id="tenant-b"))

    response = client_as(support_user).post(f"{RETRY_MATCHING}?tenant=tenant-a", follow=True)

    assert [status_of(job) for job in a_jobs] == [JobStatus.PENDING] * 2
    assert status_of(b_job) == JobStatus.DEAD
    assert messages_of(response) == ["Requeued 2; already gone 0; no longer dead 0 (of 2 tried)."]
    assert response.redirect_chain[-1][0] == f"{CHANGELIST}?tenant=tenant-a"
    assert LogEntry.objects.count() == 2


def test_retry_all_matching_is_bounded_too(support_user, client_as, settings):
    settings.ADMIN_BULK_RETRY_LIMIT = 1
    jobs = [make_dead_job(make_task()) for _ in range(2)]

    response = client_as(support_user).post(RETRY_MATCHING, follow=True)

    assert sorted(status_of(job) for job in jobs) == [JobStatus.DEAD, JobStatus.PENDING]
    assert "run it again for the rest" in messages_of(response)[0]


def test_retry_all_matching_with_a_bad_filter_retries_nothing(support_user, client_as):
    job = make_dead_job(make_task())

    response = client_as(support_user).post(f"{RETRY_MATCHING}?no_such_field=x", follow=True)

    assert status_of(job) == JobStatus.DEAD
    assert messages_of(response) == ["Those filters are not valid: nothing retried."]


# --- permissions --------------------------------------------------------------------


def test_staff_without_the_retry_permission_see_the_console_read_only(readonly_staff, client_as):
    job = make_dead_job(make_task())
    client = client_as(readonly_staff)

    listing = client.get(CHANGELIST)
    detail = client.get(detail_url(job))

    assert listing.status_code == 200 and listed(listing) == {str(job.pk)}
    assert ACTION_CHECKBOX_NAME not in listing.content.decode()
    assert "retry-matching-form" not in listing.content.decode()
    assert detail.status_code == 200 and 'id="retry-form"' not in detail.content.decode()


def test_staff_without_the_retry_permission_cannot_retry(readonly_staff, client_as):
    job = make_dead_job(make_task())
    client = client_as(readonly_staff)

    one = client.post(retry_url(job))
    matching = client.post(RETRY_MATCHING)
    action = run_action(client, [job.pk])

    assert one.status_code == 403
    assert matching.status_code == 403
    assert action.status_code == 200  # the admin answers "no action selected": the action is not offered
    assert status_of(job) == JobStatus.DEAD
    assert LogEntry.objects.count() == 0


def test_staff_who_may_retry_but_not_view_dead_jobs_can_retry_none_of_them(client_as):
    # A retry acts on jobs the console would show: whoever cannot see them cannot retry them either.
    blind = make_staff("blind-retrier", perms=("jobs.retry_dead_jobs", "jobs.view_job"))
    job = make_dead_job(make_task())
    client = client_as(blind)

    one = client.post(retry_url(job))
    matching = client.post(RETRY_MATCHING)
    action = run_action(client, [job.pk])

    assert (one.status_code, matching.status_code, action.status_code) == (403, 403, 403)
    assert status_of(job) == JobStatus.DEAD
    assert LogEntry.objects.count() == 0


@pytest.mark.parametrize("who", ["non_staff", "anonymous"])
def test_non_staff_are_sent_to_the_login_page(non_staff, client_as, client, who):
    job = make_dead_job(make_task())
    session = client_as(non_staff) if who == "non_staff" else client

    listing = session.get(CHANGELIST)
    retry = session.post(retry_url(job))

    for response in (listing, retry):
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("admin:login"))
    assert status_of(job) == JobStatus.DEAD


# --- bounded queries ----------------------------------------------------------------


def _dead_jobs_of_distinct_tasks(count: int, tenant: str = "tenant-a") -> list[Job]:
    return [make_dead_job(make_task(tenant_id=tenant, name=f"hook {tenant} {n}")) for n in range(count)]


@pytest.mark.parametrize("query", [{}, {"tenant": "tenant-a"}, {"q": "HTTP 503"}, {"http": "5xx", "age": "1h"}])
def test_the_console_list_issues_the_same_few_queries_for_3_or_60_rows(
    support_user, client_as, django_assert_max_num_queries, query
):
    client = client_as(support_user)
    _dead_jobs_of_distinct_tasks(3)
    client.get(CHANGELIST, query)  # warm the content-type and permission caches

    with django_assert_max_num_queries(12) as few:
        small = client.get(CHANGELIST, query)
    _dead_jobs_of_distinct_tasks(57)
    with django_assert_max_num_queries(len(few.captured_queries)) as many:
        large = client.get(CHANGELIST, query)

    assert small.status_code == large.status_code == 200
    assert len(large.context["cl"].result_list) == 50
    assert len(many.captured_queries) == len(few.captured_queries)
    assert not any("COUNT(*)" in q["sql"] and "LIMIT" not in q["sql"] for q in many.captured_queries)


def test_the_dead_job_page_issues_a_bounded_number_of_queries(support_user, client_as, django_assert_max_num_queries):
    job = make_dead_job(make_task())
    client = client_as(support_user)
    client.get(detail_url(job))

    with django_assert_max_num_queries(8):
        response = client.get(detail_url(job))

    assert response.status_code == 200


def test_the_all_jobs_list_issues_a_bounded_number_of_queries(support_user, client_as, django_assert_max_num_queries):
    _dead_jobs_of_distinct_tasks(60)
    client = client_as(support_user)
    url = reverse("admin:jobs_job_changelist")
    client.get(url)

    with django_assert_max_num_queries(8):
        response = client.get(url, {"status": "dead"})

    assert len(response.context["cl"].result_list) == 50


def test_detail_page_masks_signed_urls_body_fields_and_the_kept_response(support_user, client_as):
    task = make_task()
    job = make_dead_job(
        task,
        request_url="https://hooks.example.com/run?sig=url-sig-1&X-Amz-Signature=url-sig-2&page=3",
        request_headers={"X-Callback": "https://cb.example.com/done?key=header-url-3"},
        request_body='{"callback": "https://cb.example.com/?signature=body-url-4", "note": "Bearer body-bearer-5"}',
        response_body='{"access_token": "response-token-6", "error": "expired", "retry": "https://x.example.com/?sig=response-url-7"}',
    )

    body = client_as(support_user).get(detail_url(job)).content.decode()

    secrets = ("url-sig-1", "url-sig-2", "header-url-3", "body-url-4", "body-bearer-5", "response-token-6")
    for secret in (*secrets, "response-url-7"):  # long and unique: a random CSRF token can hold a short one
        assert secret not in body, secret
    for shown in ("page=3", "expired", "cb.example.com/done?key="):
        assert shown in body, shown
