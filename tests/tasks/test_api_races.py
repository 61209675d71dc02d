"""The two races of the task API, on separate MariaDB connections (one per thread).

Each race is tested twice: a free-for-all of N clients released together, and
a deterministic interleaving where one connection holds the row/key lock while
the other is provably waiting on it (its statement seen running in processlist), so the path
that only a real race reaches (1062 on insert; 0 rows on the conditional
UPDATE) is exercised every run.
"""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection, connections, transaction
from django.db.models import F

from tasks.models import Task, TaskChange
from tasks.preconditions import request_sha256
from tests.tenants import OWNER

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fake_dns")]

TASKS = "/v1/tasks"
BODY = {"name": "race", "schedule": {"cron": "* * * * *"}, "http": {"url": "https://example.com/hook"}}
CLIENTS = 6  # each racing thread signs in as the owner with its own client (a client is not thread-safe)


def _in_thread(fn):
    """Run fn on its own thread's connection; close that connection at the end."""

    def run(*args):
        try:
            return fn(*args)
        finally:
            connections.close_all()

    return run


def _wait_until_blocked(statement: str, timeout: float = 10.0) -> None:
    """Block until another connection to our test database is running `statement` (e.g. "UPDATE `tasks`").

    The caller holds the lock that statement needs, so once it is running it is
    parked on that lock. processlist is read live; information_schema.innodb_trx
    is not (its server-wide cache refreshes only after 0.1 s without any reader,
    which never happens while other test runs on the server poll it).
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT COUNT(*) FROM information_schema.processlist "
                "WHERE db = DATABASE() AND id <> CONNECTION_ID() AND command = 'Query' AND info LIKE %s",
                [statement + "%"],
            )
            if cursor.fetchone()[0]:
                return
        time.sleep(0.01)
    raise AssertionError(f"no other connection ever ran {statement!r} (it should wait on our lock)")


def test_parallel_creates_with_one_idempotency_key_all_get_the_winners_task(tenant_client):
    barrier = threading.Barrier(CLIENTS)

    @_in_thread
    def create(_):
        client = tenant_client(OWNER)
        barrier.wait()
        return client.post(TASKS, BODY, format="json", HTTP_IDEMPOTENCY_KEY="same-key")

    with ThreadPoolExecutor(CLIENTS) as pool:
        responses = list(pool.map(create, range(CLIENTS)))
    assert sorted(r.status_code for r in responses) == [200] * (CLIENTS - 1) + [201]
    assert len({r.json()["id"] for r in responses}) == 1
    assert Task.objects.count() == 1
    assert TaskChange.objects.count() == 1  # the losers' replays recorded nothing


@pytest.mark.parametrize("same_body,status", [(True, 200), (False, 422)])
def test_a_create_that_loses_the_key_race_on_1062_gets_the_winners_task_or_422(tenant_client, same_body, status):
    """The loser read no task for the key, then its INSERT waits on the winner's key lock and gets 1062."""
    inserted, release = threading.Event(), threading.Event()

    @_in_thread
    def winner():
        with transaction.atomic():
            task = Task.objects.create(
                tenant_id=OWNER,
                name="race",
                http_url="https://example.com/hook",
                cron_expression="* * * * *",
                timezone="UTC",
                idempotency_key="same-key",
                request_sha256=request_sha256(BODY) if same_body else "0" * 64,
            )
            inserted.set()
            release.wait(10)
        return task.pk

    @_in_thread
    def loser():
        inserted.wait(10)
        return tenant_client(OWNER).post(TASKS, BODY, format="json", HTTP_IDEMPOTENCY_KEY="same-key")

    with ThreadPoolExecutor(2) as pool:
        winner_id = pool.submit(winner)
        response = pool.submit(loser)
        inserted.wait(10)
        _wait_until_blocked("INSERT INTO `tasks`")
        release.set()
        winner_id, response = winner_id.result(), response.result()
    assert response.status_code == status, response.content
    if same_body:
        assert response.json()["id"] == str(winner_id)
    else:
        assert "Idempotency-Key" in response.json()["errors"]
    assert Task.objects.count() == 1


def _create(owner) -> str:
    response = owner.post(TASKS, BODY, format="json")
    assert response.status_code == 201
    return response.json()["id"]


def test_parallel_patches_with_one_version_give_one_200_and_the_rest_412(owner, tenant_client):
    task_id = _create(owner)
    barrier = threading.Barrier(CLIENTS)

    @_in_thread
    def patch(i):
        client = tenant_client(OWNER)
        barrier.wait()
        return client.patch(f"{TASKS}/{task_id}", {"name": f"by {i}"}, format="json", HTTP_IF_MATCH='"1"')

    with ThreadPoolExecutor(CLIENTS) as pool:
        responses = list(pool.map(patch, range(CLIENTS)))
    assert sorted(r.status_code for r in responses) == [200] + [412] * (CLIENTS - 1)
    winner = next(r for r in responses if r.status_code == 200).json()
    task = Task.objects.get(pk=task_id)
    assert (task.version, task.name) == (2, winner["name"])
    # Only the winner's edit is recorded, with the old and new it really wrote.
    edit = TaskChange.objects.get(task_id=task_id, action="update")
    assert (edit.version, edit.changes[0]["old"], edit.changes[0]["new"]) == (2, BODY["name"], winner["name"])


def test_a_patch_that_read_the_version_before_a_concurrent_commit_is_412_not_an_overwrite(owner):
    """The PATCH's read sees version 1, its UPDATE waits on our row lock, then matches 0 rows."""
    task_id = _create(owner)
    locked, release = threading.Event(), threading.Event()

    @_in_thread
    def other_writer():
        with transaction.atomic():
            Task.objects.filter(pk=task_id).update(name="other writer", version=F("version") + 1)
            locked.set()
            release.wait(10)

    @_in_thread
    def patch():
        locked.wait(10)
        return owner.patch(f"{TASKS}/{task_id}", {"name": "late"}, format="json", HTTP_IF_MATCH='"1"')

    with ThreadPoolExecutor(2) as pool:
        writer = pool.submit(other_writer)
        response = pool.submit(patch)
        locked.wait(10)
        _wait_until_blocked("UPDATE `tasks`")
        release.set()
        writer.result()
        response = response.result()
    assert response.status_code == 412, response.content
    assert response.json()["current_etag"] == '"2"'
    task = Task.objects.get(pk=task_id)
    assert (task.name, task.version) == ("other writer", 2)
