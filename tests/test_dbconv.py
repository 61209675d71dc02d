"""The fast DATETIME converter gives the driver's own values, and every connection gets it."""

from __future__ import annotations

from datetime import datetime

import pytest
from django.db import connection
from MySQLdb.constants import FIELD_TYPE
from MySQLdb.times import DateTime_or_None

from database.dbconv import datetime_or_none


@pytest.mark.parametrize(
    "text",
    [
        "2026-12-01 17:27:08",
        "2026-12-01 17:27:08.123",
        "2026-12-01 17:27:08.123456",
        "2026-12-01 17:27:08.5",
        "9999-12-31 23:59:59.999999",
        "1000-01-01 00:00:00",
        "0000-00-00 00:00:00",  # MySQL's zero date: None
        "2026-02-30 00:00:00",  # no such day: None
        "2026-12-01",  # a DATE's text: the driver's date
        "2026-12-01 17:27:08.1234567",  # seven fraction digits: fromisoformat takes them, the driver refuses
        "",
    ],
)
def test_each_value_is_the_one_the_drivers_converter_gives(text):
    ours = datetime_or_none(text)
    assert ours == DateTime_or_None(text)
    assert type(ours) is type(DateTime_or_None(text))


@pytest.mark.django_db
def test_a_connection_reads_datetimes_through_it_with_the_same_values():
    with connection.cursor() as cursor:
        cursor.execute("SELECT TIMESTAMP'2026-01-02 03:04:05.250', CAST(NULL AS DATETIME), NOW(3)")
        stamp, null, now = cursor.fetchone()
    assert connection.connection.converter[FIELD_TYPE.DATETIME] is datetime_or_none
    assert connection.connection.converter[FIELD_TYPE.TIMESTAMP] is datetime_or_none
    assert stamp == datetime(2026, 1, 2, 3, 4, 5, 250000) and stamp.tzinfo is None
    assert null is None and isinstance(now, datetime)
