"""database.backend: atomic() begins with START TRANSACTION and sends no SET autocommit, on real MariaDB,
and a transaction is still one (invisible to another connection until its COMMIT, gone on ROLLBACK)."""

from __future__ import annotations

import MySQLdb
import pytest
from django.conf import settings
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from tasks.models import TenantLimits

pytestmark = pytest.mark.django_db(transaction=True)


def _session_counts() -> dict[str, int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SHOW SESSION STATUS WHERE Variable_name IN ('Com_begin', 'Com_commit', 'Com_rollback', 'Com_set_option')"
        )
        return {name: int(value) for name, value in cursor.fetchall()}


def _sent(before: dict[str, int]) -> dict[str, int]:
    after = _session_counts()
    return {name: after[name] - before[name] for name in before if after[name] != before[name]}


def _other_sees(tenant_id: str) -> bool:
    """Whether a second connection (READ COMMITTED) sees the tenant's limits row: only once committed."""
    db = settings.DATABASES["default"]
    other = MySQLdb.connect(
        host=db["HOST"] or "127.0.0.1", port=int(db["PORT"] or 3306), user=db["USER"], password=db["PASSWORD"] or "",
        database=db["NAME"],
    )  # fmt: skip
    try:
        with other.cursor() as cursor:
            cursor.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
            cursor.execute("SELECT COUNT(*) FROM tenant_limits WHERE tenant_id = %s", [tenant_id])
            return cursor.fetchone()[0] == 1
    finally:
        other.close()


def test_atomic_begins_with_start_transaction_and_switches_no_autocommit():
    connection.ensure_connection()
    before = _session_counts()
    with CaptureQueriesContext(connection) as queries, transaction.atomic():
        TenantLimits.objects.create(tenant_id="tenant-a")
    assert _sent(before) == {"Com_begin": 1, "Com_commit": 1}  # SHOW is not counted among these
    kinds = [query["sql"].split(" ", 1)[0] for query in queries.captured_queries]
    assert kinds[0] == "BEGIN" and kinds[-1] == "COMMIT"
    assert connection.get_autocommit() and connection.connection.get_autocommit()


def test_a_transaction_is_invisible_to_another_connection_until_its_commit():
    with transaction.atomic():
        TenantLimits.objects.create(tenant_id="tenant-a")
        assert not _other_sees("tenant-a")
    assert _other_sees("tenant-a")
    # After it, the session is in autocommit: a statement outside atomic() commits at once.
    TenantLimits.objects.create(tenant_id="tenant-b")
    assert _other_sees("tenant-b")


def test_a_rollback_leaves_nothing_and_a_savepoint_rolls_back_alone():
    before = _session_counts()
    with pytest.raises(RuntimeError), transaction.atomic():
        TenantLimits.objects.create(tenant_id="tenant-a")
        raise RuntimeError("undo")
    assert _sent(before) == {"Com_begin": 1, "Com_rollback": 1}
    assert not TenantLimits.objects.filter(tenant_id="tenant-a").exists() and not _other_sees("tenant-a")
    with transaction.atomic():
        TenantLimits.objects.create(tenant_id="outer")
        with pytest.raises(RuntimeError), transaction.atomic():
            TenantLimits.objects.create(tenant_id="inner")
            raise RuntimeError("undo the inner block only")
    assert list(TenantLimits.objects.values_list("tenant_id", flat=True)) == ["outer"]


def test_autocommit_turned_off_by_hand_still_sends_set_autocommit_both_ways():
    connection.ensure_connection()
    before = _session_counts()
    transaction.set_autocommit(False)
    try:
        TenantLimits.objects.create(tenant_id="tenant-a")
        assert not _other_sees("tenant-a")
        transaction.commit()
    finally:
        transaction.set_autocommit(True)
    assert _other_sees("tenant-a")
    assert _sent(before) == {"Com_set_option": 2, "Com_commit": 1}
