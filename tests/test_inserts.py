"""database.inserts.insert_row writes the row `save(force_insert=True)` writes."""

from __future__ import annotations

import datetime

import pytest
from django.db import connection
from django.db.models import F, signals

from database.inserts import insert_row
from tasks.models import Task, TaskChange
from tests.factories import make_task

pytestmark = pytest.mark.django_db


def _row(model, pk) -> dict:
    columns = [field.column for field in model._meta.concrete_fields]
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {', '.join(f'`{c}`' for c in columns)} FROM {model._meta.db_table} WHERE id = %s",
            [model._meta.pk.get_db_prep_value(pk, connection)],
        )
        return dict(zip(columns, cursor.fetchone(), strict=True))


def _task(**fields) -> Task:
    now = datetime.datetime(2026, 12, 4, 11, 0, 0, 123456, tzinfo=datetime.UTC)
    return Task(
        tenant_id="tenant-a",
        name="naïve ✓",
        http_url="https://example.com/x",
        http_method="POST",
        http_headers={"X-Team": "a", "X-Null": None},
        http_body='{"a": 1}',
        cron_expression="*/5 * * * *",
        timezone="Europe/Madrid",
        labels={"env": "prod"},
        exclude_calendars=["holidays"],
        next_run_at=now,
        status="active",
        version=1,
        request_sha256="ab" * 32,
        **fields,
    )


def test_a_task_row_is_the_orms_column_for_column():
    by_orm, by_insert = _task(idempotency_key="key-1"), _task(idempotency_key="key-2")
    by_orm.save(force_insert=True)
    insert_row(by_insert)
    orm_row, insert_row_values = _row(Task, by_orm.pk), _row(Task, by_insert.pk)
    for volatile in ("id", "idempotency_key", "created_at", "updated_at"):
        orm_row.pop(volatile), insert_row_values.pop(volatile)
    assert insert_row_values == orm_row
    # auto_now_add and auto_now were set on the instance, as save sets them, and written.
    assert by_insert.created_at is not None and by_insert.updated_at is not None
    stored = Task.objects.get(pk=by_insert.pk)
    assert (stored.created_at, stored.updated_at) == (by_insert.created_at, by_insert.updated_at)
    assert stored.http_headers == {"X-Team": "a", "X-Null": None} and stored.labels == {"env": "prod"}
    # The instance is saved: a later save is an UPDATE of the same row, not a second insert.
    assert not by_insert._state.adding
    by_insert.name = "renamed"
    by_insert.save()
    assert Task.objects.filter(pk=by_insert.pk).values_list("name", flat=True).get() == "renamed"


def test_a_change_record_row_is_the_orms_column_for_column():
    task = make_task()
    at = datetime.datetime(2026, 12, 4, 11, 0, tzinfo=datetime.UTC)
    fields = {"task_id": task.pk, "tenant_id": task.tenant_id, "action": "create", "actor": "tenant:a", "at": at}
    by_orm = TaskChange(**fields, version=1, changes=[{"field": "name", "old": None, "new": "ü"}])
    by_insert = TaskChange(**fields, version=1, changes=[{"field": "name", "old": None, "new": "ü"}])
    by_orm.save(force_insert=True)
    insert_row(by_insert)
    orm_row, insert_row_values = _row(TaskChange, by_orm.pk), _row(TaskChange, by_insert.pk)
    orm_row.pop("id"), insert_row_values.pop("id")
    assert insert_row_values == orm_row


def test_a_row_without_its_primary_key_is_refused_before_any_statement():
    task = _task()
    task.pk = None
    with pytest.raises(ValueError, match="primary key set before the insert"):
        insert_row(task)
    assert not Task.objects.exists()


def test_a_model_whose_saves_are_listened_to_is_refused():
    def listener(**kwargs):
        pass

    signals.post_save.connect(listener, sender=Task)
    try:
        with pytest.raises(TypeError, match="something listens to its saves"):
            insert_row(_task())
    finally:
        signals.post_save.disconnect(listener, sender=Task)
    assert not Task.objects.exists()


def test_an_expression_value_is_refused():
    task = _task()
    task.runs_scheduled = F("runs_scheduled") + 1
    with pytest.raises(TypeError, match="an expression"):
        insert_row(task)
    assert not Task.objects.exists()


def _django_params(instance) -> list:
    return [
        field.get_db_prep_save(field.pre_save(instance, True), connection)
        for field in type(instance)._meta.concrete_fields
    ]


@pytest.fixture
def frozen_clock(monkeypatch):
    """auto_now and auto_now_add read this clock: both paths then set the same instant."""
    from django.db.models import fields

    instant = datetime.datetime(2026, 12, 4, 11, 0, 1, tzinfo=datetime.UTC)
    monkeypatch.setattr(fields.timezone, "now", lambda: instant)


def test_the_values_are_what_djangos_field_methods_make_of_each_kind(frozen_clock):
    madrid = datetime.timezone(datetime.timedelta(hours=1))
    task = _task(
        run_at=None,
        anchor=datetime.datetime(2026, 12, 4, 12, 30, tzinfo=madrid),  # aware, not UTC: made naive UTC
        starts_at=datetime.datetime(2026, 12, 4, 12, 30, 5, 7, tzinfo=datetime.UTC),
        max_runs=7,
        delete_after_completion=True,
        secret_ref=None,
    )
    task.status = type("Status", (str,), {})("active")  # a str subclass (a TextChoices member is one)
    from database.inserts import row_params

    ours = row_params(task)
    assert ours == _django_params(task)
    by_name = dict(zip([f.attname for f in Task._meta.concrete_fields], ours, strict=True))
    assert by_name["anchor"] == "2026-12-04 11:30:00"
    assert by_name["starts_at"] == "2026-12-04 12:30:05.000007"
    assert by_name["delete_after_completion"] is True and by_name["max_runs"] == 7
    assert by_name["updated_at"] == by_name["created_at"] == "2026-12-04 11:00:01"
    assert by_name["id"] == task.pk.bytes and by_name["http_headers"] == '{"X-Team": "a", "X-Null": null}'


def test_a_naive_datetime_takes_djangos_path_and_its_warning(frozen_clock):
    task = _task(starts_at=datetime.datetime(2026, 12, 4, 12, 30))
    from database.inserts import row_params

    with pytest.warns(RuntimeWarning, match="naive datetime"):
        ours = row_params(task)
    with pytest.warns(RuntimeWarning, match="naive datetime"):
        assert ours == _django_params(task)
