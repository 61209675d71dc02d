"""A faster DATETIME converter for mysqlclient connections, same values.

mysqlclient turns each DATETIME/TIMESTAMP text into a datetime in Python (`DateTime_or_None`:
slices and seven int() calls); `datetime.fromisoformat` parses the same text in C, several
times faster (docs/benchmarks-notes.md). The executor's claim reads three per job and its result lock
one. Anything fromisoformat refuses (MySQL's zero dates '0000-00-00 ...') goes to the driver's own
converter, so every value comes out as before (naive, as Django's ORM expects).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from MySQLdb.constants import FIELD_TYPE
from MySQLdb.times import DateTime_or_None


def datetime_or_none(text: str) -> datetime | None:
    """The driver's DATETIME value for `text`, parsed in C when it can be."""
    # Not 'YYYY-MM-DD hh:mm:ss[.ffffff]' (shorter: a date; longer: 7+ fraction digits, which
    # fromisoformat takes and the driver refuses): the driver decides.
    if not 19 <= len(text) <= 26:
        return DateTime_or_None(text)
    try:
        return datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return DateTime_or_None(text)


def install_fast_datetimes(sender: Any, connection: Any, **kwargs: Any) -> None:
    """`connection_created` receiver: this connection's DATETIME and TIMESTAMP converters (its own copy)."""
    if connection.vendor != "mysql":
        return
    converter = connection.connection.converter
    converter[FIELD_TYPE.DATETIME] = datetime_or_none
    converter[FIELD_TYPE.TIMESTAMP] = datetime_or_none
