"""UUIDv7 ids sort in time order, in Python and in MySQL."""

import uuid

import pytest

from domain.ids import new_id, parse_id
from tasks.models import Task


def test_ids_generated_in_sequence_sort_in_generation_order():
    ids = [new_id() for _ in range(2000)]
    assert all(i.version == 7 for i in ids)
    assert ids == sorted(ids)
    assert [i.bytes for i in ids] == sorted(i.bytes for i in ids)


def test_parse_id_refuses_what_is_not_a_uuid():
    assert parse_id("not-a-uuid") is None
    assert parse_id(None) is None
    assert parse_id(str(uuid.UUID(int=5))) == uuid.UUID(int=5)


@pytest.mark.django_db
def test_rows_ordered_by_id_come_back_in_creation_order():
    created = [
        Task.objects.create(
            tenant_id="t1",
            name=f"task {n}",
            http_url="https://example.com/",
            cron_expression="* * * * *",
            timezone="UTC",
        )
        for n in range(50)
    ]
    assert list(Task.objects.order_by("id").values_list("id", flat=True)) == [t.id for t in created]
    assert Task.objects.get(id=str(created[7].id)).name == "task 7"
