"""Fixtures of the bench tests: each bench run gets its own database beside the test database."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import MySQLdb
import pytest
from django.conf import settings


@pytest.fixture
def bench_database() -> Iterator[Callable[[str], str]]:
    """Name a bench's database: the test database's name + `suffix`; every one named is dropped after the test."""
    names: list[str] = []

    def name(suffix: str) -> str:
        names.append(settings.DATABASES["default"]["NAME"] + suffix)
        return names[-1]

    yield name
    db = settings.DATABASES["default"]
    # Its own connection: a DROP on the test's connection would commit the test's transaction.
    server = MySQLdb.connect(
        host=db["HOST"] or "127.0.0.1", port=int(db["PORT"] or 3306), user=db["USER"], password=db["PASSWORD"] or ""
    )
    try:
        with server.cursor() as cursor:
            for dropped in names:
                cursor.execute(f"DROP DATABASE IF EXISTS `{dropped}`")
    finally:
        server.close()
