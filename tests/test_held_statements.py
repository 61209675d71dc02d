"""database/backend/connection.py and the backend's health check, on real MariaDB: a held START
TRANSACTION or INSERT goes with the next statement, in one round trip, and fails as it would alone;
a kept connection's health check sends nothing while its socket is quiet."""

from __future__ import annotations

import os
import select
import threading
import time
import uuid

import MySQLdb
import pytest
from django.conf import settings
from django.db import IntegrityError, OperationalError, connection, transaction
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from database.inserts import insert_row
from tasks import services
from tasks.models import Task, TaskChange, TenantLimits
from tests.db_proxy import DatabaseProxy

pytestmark = pytest.mark.django_db(transaction=True)

SPEC = services.ScheduleSpec(cron="*/5 * * * *", timezone="UTC", run_at=None)
FIELDS = {"name": "n", "http_url": "https://example.com/hook", "http_method": "POST", "http_headers": {}}


def _other() -> MySQLdb.Connection:
    db = settings.DATABASES["default"]
    return MySQLdb.connect(
        host=db["HOST"] or "127.0.0.1", port=int(db["PORT"] or 3306), user=db["USER"], password=db["PASSWORD"] or "",
        database=db["NAME"], autocommit=True,
    )  # fmt: skip


def _other_sees(sql: str, params: list) -> int:
    other = _other()
    try:
        with other.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchone()[0]
    finally:
        other.close()


def _change(task_id: uuid.UUID, pk: uuid.UUID | None = None) -> TaskChange:
    change = TaskChange(
        task_id=task_id, tenant_id="tenant-a", action="create", actor="system", version=1, changes=[], at=timezone.now()
    )
    if pk is not None:
        change.pk = pk
    return change


def _session_counts() -> dict[str, int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SHOW SESSION STATUS WHERE Variable_name IN"
            " ('Com_begin', 'Com_commit', 'Com_rollback', 'Com_insert', 'Com_admin_commands')"
        )
        return {name: int(value) for name, value in cursor.fetchall()}


@pytest.fixture
def proxied():
    """The default connection through a proxy that counts its round trips (answers held 20 ms)."""
    proxy = DatabaseProxy(answer_delay=0.02)
    proxy.restore()
    saved = connection.settings_dict["HOST"], connection.settings_dict["PORT"]
    connection.close()
    connection.settings_dict["HOST"], connection.settings_dict["PORT"] = "127.0.0.1", str(proxy.port)
    try:
        connection.ensure_connection()
        yield proxy
    finally:
        connection.close()
        connection.settings_dict["HOST"], connection.settings_dict["PORT"] = saved
        proxy.cut()


def _round_trips(proxy: DatabaseProxy, work) -> int:
    before = proxy.round_trips
    work()
    return proxy.round_trips - before


# --- round trips ---------------------------------------------------------------------------------


def test_a_transaction_begins_with_its_first_statement_in_one_round_trip(proxied):
    def work():
        with transaction.atomic():
            TenantLimits.objects.create(tenant_id="tenant-a")

    assert _round_trips(proxied, work) == 2  # START TRANSACTION + INSERT, then COMMIT
    assert _other_sees("SELECT COUNT(*) FROM tenant_limits WHERE tenant_id = %s", ["tenant-a"]) == 1


def test_a_block_that_sends_nothing_sends_neither_its_begin_nor_its_end(proxied):
    def work():
        with transaction.atomic():
            pass
        with pytest.raises(RuntimeError), transaction.atomic():
            raise RuntimeError("undo nothing")

    assert _round_trips(proxied, work) == 0
    assert connection.get_autocommit() and not connection.in_atomic_block


def test_a_held_insert_goes_with_the_next_statement(proxied):
    task = Task.objects.create(tenant_id="tenant-a", name="t", http_url="https://example.com/", next_run_at=None)
    change = _change(task.pk)

    def work():
        with transaction.atomic():
            insert_row(change, deferred=True)
            TenantLimits.objects.create(tenant_id="tenant-a")

    assert _round_trips(proxied, work) == 2  # START + the held INSERT + INSERT, then COMMIT
    assert TaskChange.objects.filter(pk=change.pk).exists() and TenantLimits.objects.filter(pk="tenant-a").exists()


def test_a_create_within_the_bound_sends_its_rows_and_the_bound_in_one_round_trip(proxied):
    services.task_create(tenant_id="tenant-a", fields=FIELDS, schedule_spec=SPEC, actor="system")  # the bound set
    made = []

    def work():
        made.append(services.task_create(tenant_id="tenant-a", fields=FIELDS, schedule_spec=SPEC, actor="system"))

    # START + INSERT task + INSERT change record + the bound's UPDATE, then COMMIT.
    assert _round_trips(proxied, work) == 2
    task, created = made[0]
    assert created and Task.objects.filter(pk=task.pk).exists()
    assert TaskChange.objects.filter(task_id=task.pk, action="create").count() == 1
    assert TenantLimits.objects.get(pk="tenant-a").active_tasks_bound == 2


def test_a_kept_connections_health_check_sends_nothing_while_its_socket_is_quiet(proxied):
    kept = connection.connection

    def work():
        connection.health_check_done = False
        connection.close_if_health_check_failed()

    assert _round_trips(proxied, work) == 0
    assert connection.connection is kept


# --- failures ------------------------------------------------------------------------------------


def test_a_first_statement_that_fails_with_the_held_begin_leaves_no_transaction():
    TenantLimits.objects.create(tenant_id="tenant-a")
    before = _session_counts()
    with pytest.raises(IntegrityError), transaction.atomic():
        TenantLimits.objects.create(tenant_id="tenant-a")  # a duplicate key
    assert {k: v - before[k] for k, v in _session_counts().items() if v != before[k]} == {
        "Com_begin": 1,
        "Com_insert": 1,
        "Com_rollback": 1,
    }
    with connection.cursor() as cursor:
        cursor.execute("SELECT @@in_transaction")
        assert cursor.fetchone()[0] == 0
    assert connection.connection.get_autocommit()


def test_a_held_insert_that_fails_is_raised_by_the_next_statement_and_the_transaction_rolls_back():
    task = Task.objects.create(tenant_id="tenant-a", name="t", http_url="https://example.com/", next_run_at=None)
    taken = _change(task.pk)
    insert_row(taken)
    with pytest.raises(IntegrityError, match="Duplicate entry"), transaction.atomic():
        insert_row(_change(task.pk, pk=taken.pk), deferred=True)
        TenantLimits.objects.create(tenant_id="tenant-b")  # runs on the server, then is rolled back
    assert not TenantLimits.objects.filter(pk="tenant-b").exists()
    assert _other_sees("SELECT COUNT(*) FROM tenant_limits WHERE tenant_id = %s", ["tenant-b"]) == 0
    assert TaskChange.objects.filter(task_id=task.pk).count() == 1


def test_a_held_insert_that_fails_at_commit_commits_nothing():
    task = Task.objects.create(tenant_id="tenant-a", name="t", http_url="https://example.com/", next_run_at=None)
    taken = _change(task.pk)
    insert_row(taken)
    before = _session_counts()
    with pytest.raises(IntegrityError, match="Duplicate entry"), transaction.atomic():
        TenantLimits.objects.create(tenant_id="tenant-b")
        insert_row(_change(task.pk, pk=taken.pk), deferred=True)
    sent = {k: v - before[k] for k, v in _session_counts().items() if v != before[k]}
    assert "Com_commit" not in sent and sent["Com_rollback"] == 1, sent
    assert _other_sees("SELECT COUNT(*) FROM tenant_limits WHERE tenant_id = %s", ["tenant-b"]) == 0


def test_a_held_insert_outside_a_transaction_is_sent_at_once():
    task = Task.objects.create(tenant_id="tenant-a", name="t", http_url="https://example.com/", next_run_at=None)
    change = _change(task.pk)
    insert_row(change, deferred=True)
    assert _other_sees("SELECT COUNT(*) FROM task_changes WHERE id = %s", [change.pk.bytes]) == 1


def test_a_held_insert_in_a_transaction_marked_for_rollback_is_refused():
    task = Task.objects.create(tenant_id="tenant-a", name="t", http_url="https://example.com/", next_run_at=None)
    with transaction.atomic():
        transaction.set_rollback(True)
        with pytest.raises(TransactionManagementError):
            insert_row(_change(task.pk), deferred=True)
    assert not TaskChange.objects.filter(task_id=task.pk).exists()


def test_a_held_insert_is_captured_as_the_cursor_would_log_it():
    task = Task.objects.create(tenant_id="tenant-a", name="t", http_url="https://example.com/", next_run_at=None)
    with CaptureQueriesContext(connection) as queries, transaction.atomic():
        insert_row(_change(task.pk), deferred=True)
    statements = [query["sql"] for query in queries.captured_queries]
    assert statements[0] == "BEGIN" and statements[-1] == "COMMIT"
    assert statements[1].startswith("INSERT INTO `task_changes`") and "'tenant-a'" in statements[1]


# --- the health check ----------------------------------------------------------------------------


def _readable_within(seconds: float) -> bool:
    poller = select.poll()
    poller.register(connection.connection.fileno(), select.POLLIN)
    return bool(poller.poll(seconds * 1000))


def _killed_by_the_server() -> int:
    """KILL the default connection from another one; its thread id, once its socket has the news."""
    connection.ensure_connection()
    thread_id = connection.connection.thread_id()
    other = _other()
    try:
        other.query(f"KILL CONNECTION {thread_id}")
    finally:
        other.close()
    assert _readable_within(5)
    return thread_id


def test_a_connection_the_server_killed_is_unusable_and_the_next_statement_reconnects():
    thread_id = _killed_by_the_server()
    assert not connection.is_usable()
    connection.health_check_done = False
    connection.close_if_health_check_failed()
    assert TenantLimits.objects.count() == 0  # a new connection
    assert connection.connection.thread_id() != thread_id


def _past_wait_timeout() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SET SESSION wait_timeout = 1")
    assert connection.is_usable()


def _answer_nobody_read() -> None:
    """A ping would read the answer as its own and call the connection usable."""
    connection.ensure_connection()
    connection.connection.send_query(b"SELECT 1")


@pytest.mark.parametrize("spoil", [_past_wait_timeout, _answer_nobody_read])
def test_a_connection_with_something_to_read_between_requests_is_unusable(spoil):
    spoil()
    try:
        assert _readable_within(10)
        assert not connection.is_usable()
    finally:
        connection.close()


def test_a_quiet_connections_health_check_sends_no_ping():
    connection.ensure_connection()
    before = _session_counts()["Com_admin_commands"]
    assert connection.is_usable()
    assert _session_counts()["Com_admin_commands"] == before
    connection.connection.ping()  # what the stock check sends, counted: the figure above can move
    assert _session_counts()["Com_admin_commands"] == before + 1


def test_a_lost_connections_socket_number_taken_by_another_file_is_not_mistaken_for_it():
    """The driver closes the socket of a lost connection but keeps its number, which the next file opened
    takes: a quiet file there must not pass for a quiet connection."""
    connection.ensure_connection()
    descriptor = connection.connection.fileno()
    _killed_by_the_server()
    with pytest.raises(OperationalError), connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    reader, writer = os.pipe()  # the lowest free numbers: the lost socket's among them
    try:
        assert descriptor in (reader, writer)
        assert not connection.is_usable()
    finally:
        os.close(reader)
        os.close(writer)
        connection.close()


# --- what the review found ---------------------------------------------------------------------


def test_a_round_trip_left_half_read_closes_the_connection():
    """An exception other than the driver's between the sends and the last answer: the answers left
    unread would be taken for the next statement's."""
    connection.ensure_connection()
    driver = connection.connection

    class Interrupted(BaseException):
        pass

    reads = {"n": 0}
    real_read = driver.read_query_result

    def read_then_interrupt():
        reads["n"] += 1
        if reads["n"] == 2:
            raise Interrupted
        return real_read()

    driver.read_query_result = read_then_interrupt  # this connection only (it is closed below)
    with pytest.raises(Interrupted), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT 2")
    assert not driver.open  # closed, and Django's next statement runs on another connection
    with connection.cursor() as cursor:
        cursor.execute("SELECT 3")
        assert cursor.fetchone()[0] == 3


def test_autocommit_turned_back_on_sends_what_is_held_first():
    """SET autocommit=1 commits what is open: a held INSERT of a transaction run by hand goes before it."""
    task = Task.objects.create(tenant_id="tenant-a", name="t", http_url="https://example.com/", next_run_at=None)
    change = _change(task.pk)
    transaction.set_autocommit(False)
    try:
        with transaction.atomic(savepoint=False):
            insert_row(change, deferred=True)
        assert connection.connection.held
    finally:
        transaction.set_autocommit(True)
    assert not connection.connection.held
    assert _other_sees("SELECT COUNT(*) FROM task_changes WHERE id = %s", [change.pk.bytes]) == 1


def test_a_held_insert_refused_at_commit_for_a_null_is_an_integrity_error_as_from_the_cursor():
    task = Task.objects.create(tenant_id="tenant-a", name="t", http_url="https://example.com/", next_run_at=None)
    change = _change(task.pk)
    change.actor = None  # NOT NULL: 1048, which Django's cursor raises as IntegrityError
    with pytest.raises(IntegrityError, match=r"1048|cannot be null"), transaction.atomic():
        insert_row(change, deferred=True)
    assert not TaskChange.objects.filter(task_id=task.pk).exists()


@pytest.mark.parametrize(
    ("key", "calendars", "held"),
    [(None, (), 2), ("key-1", (), 0), (None, ("holidays",), 0)],
    ids=["plain", "with an idempotency key", "with a calendar"],
)
def test_a_create_holds_its_inserts_only_where_nothing_of_it_can_wait_on_a_lock(monkeypatch, key, calendars, held):
    from database.backend.connection import Connection
    from tasks.calendars import services as calendar_services

    if calendars:
        calendar_services.calendar_put(
            tenant_id="tenant-a",
            name="holidays",
            spec=calendar_services.CalendarSpec(timezone="UTC", dates=(), ranges=()),
        )
    spec = services.ScheduleSpec(cron="*/5 * * * *", timezone="UTC", run_at=None, exclude_calendars=calendars)
    fields = {**FIELDS, "exclude_calendars": list(calendars)}
    services.task_create(tenant_id="tenant-a", fields=fields, schedule_spec=spec, actor="system")  # the bound set
    holds = []
    real_hold = Connection.hold
    monkeypatch.setattr(Connection, "hold", lambda self, *a: holds.append(a[0]) or real_hold(self, *a))
    task, created = services.task_create(
        tenant_id="tenant-a", fields=fields, schedule_spec=spec, actor="system", idempotency_key=key,
        request_sha256="ab" * 32 if key else None,
    )  # fmt: skip
    assert created and len(holds) == held
    assert TaskChange.objects.filter(task_id=task.pk).count() == 1


def test_a_create_with_a_calendar_locks_its_tenant_before_the_calendar_as_every_other_writer_does():
    """Rows first would lock the calendar (task_calendars_set's FOR UPDATE) before the tenant's row, and a
    keyed create, a recount or an import, which lock them the other way round, would deadlock with it."""
    from tasks.calendars import services as calendar_services

    calendar_services.calendar_put(
        tenant_id="tenant-a", name="holidays", spec=calendar_services.CalendarSpec(timezone="UTC", dates=(), ranges=())
    )
    spec = services.ScheduleSpec(cron="*/5 * * * *", timezone="UTC", run_at=None, exclude_calendars=("holidays",))
    fields = {**FIELDS, "exclude_calendars": ["holidays"]}
    services.task_create(tenant_id="tenant-a", fields=fields, schedule_spec=spec, actor="system")  # the bound set
    other = _other()
    outcome: dict[str, str] = {}
    try:
        with other.cursor() as cursor:
            cursor.execute("SET SESSION innodb_lock_wait_timeout = 10")
            cursor.execute("START TRANSACTION")
            cursor.execute(  # what lock_tenants sends
                "INSERT INTO tenant_limits (tenant_id, note, updated_at) VALUES ('tenant-a', '', NOW(6))"
                " ON DUPLICATE KEY UPDATE note = note"
            )

            def create() -> None:
                try:
                    services.task_create(tenant_id="tenant-a", fields=fields, schedule_spec=spec, actor="system")
                    outcome["create"] = "created"
                except Exception as exc:
                    outcome["create"] = repr(exc)
                finally:
                    connection.close()

            creator = threading.Thread(target=create)
            creator.start()
            time.sleep(1.0)  # the create waits on the tenant's row (or, rows first, holds the calendar)
            try:
                cursor.execute(
                    "SELECT name FROM calendars WHERE tenant_id = 'tenant-a' AND name = 'holidays' FOR UPDATE"
                )
                outcome["other"] = "locked"
            except MySQLdb.Error as exc:
                outcome["other"] = repr(exc)
            other.commit()
            creator.join(30)
    finally:
        other.close()
    assert outcome == {"create": "created", "other": "locked"}, outcome
