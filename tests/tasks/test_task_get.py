"""selectors.task_get reads one task in one written-out statement, as the ORM would read it."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tasks import selectors
from tasks.models import Task, TaskStatus
from tests.factories import make_task, varied_tasks

TENANT = "tenant-get"

pytestmark = pytest.mark.django_db


def test_each_column_holds_what_the_orm_reads() -> None:
    for task in varied_tasks(TENANT):
        with CaptureQueriesContext(connection) as queries:
            got = selectors.task_get(tenant_id=TENANT, task_id=task.pk)
        assert len(queries) == 1
        assert isinstance(got, Task)
        for field in Task._meta.concrete_fields:
            assert getattr(got, field.attname) == getattr(task, field.attname), field.attname
            assert type(getattr(got, field.attname)) is type(getattr(task, field.attname)), field.attname
        assert (got._state.adding, got._state.db) == (False, "default")


def test_what_it_reads_saves_as_the_orms_instance_does() -> None:
    task = make_task(tenant_id=TENANT)
    got = selectors.task_get(tenant_id=TENANT, task_id=task.pk)
    assert got is not None
    got.name = "renamed"
    with CaptureQueriesContext(connection) as queries:
        got.save(update_fields=["name"])
    assert queries[0]["sql"].startswith("UPDATE")
    assert Task.objects.get(pk=task.pk).name == "renamed"
    assert Task.objects.filter(tenant_id=TENANT).count() == 1


def test_none_for_another_tenants_a_deleted_and_an_unknown_task() -> None:
    mine = make_task(tenant_id=TENANT)
    deleted = make_task(tenant_id=TENANT, status=TaskStatus.DELETED)
    assert selectors.task_get(tenant_id="tenant-other", task_id=mine.pk) is None
    assert selectors.task_get(tenant_id=TENANT, task_id=deleted.pk) is None
    assert selectors.task_get(tenant_id=TENANT, task_id=uuid.uuid4()) is None
    assert selectors.task_get(tenant_id=TENANT, task_id=mine.pk) == mine
