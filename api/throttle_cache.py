"""The throttles' database cache: Django's, with `set` as one upsert instead of a transaction of four.

The tenant throttle reads and writes its counts on every API request (DRF's
SimpleRateThrottle: `get` the history, `set` it back), in the table
THROTTLE_CACHE_URL names, so every process and pod shares one budget. Django's
DatabaseCache.set costs a COUNT(*) of the table (to cull it), then a transaction
(begin, SELECT, UPDATE or INSERT, COMMIT): five round trips on the queue's MySQL for
each request (six on Django's stock backend, which also turns autocommit back on).
Here `set` is one INSERT ... ON DUPLICATE KEY UPDATE; the count that bounds the table (MAX_ENTRIES) runs on one set in
CULL_EVERY (an OPTIONS key, default 100) per process, so the table passes its bound
by at most that many rows per process between two culls. What DRF reads and
writes, and when, is unchanged.
"""

from __future__ import annotations

import base64
import logging
import pickle
from datetime import UTC, datetime
from itertools import count
from typing import Any

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.db import DatabaseCache
from django.db import DatabaseError, connections, router, transaction
from django.utils.timezone import now as tz_now

logger = logging.getLogger(__name__)


class UpsertDatabaseCache(DatabaseCache):
    def __init__(self, table: str, params: dict[str, Any]) -> None:
        options = dict(params.get("OPTIONS") or {})
        self._cull_every = max(1, int(options.pop("CULL_EVERY", 100)))
        super().__init__(table, {**params, "OPTIONS": options})
        self._table_name = table
        self._sets = count()

    def set(self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> None:
        key = self.make_and_validate_key(key, version=version)
        backend_timeout = self.get_backend_timeout(timeout)
        db = router.db_for_write(self.cache_model_class)
        connection = connections[db]
        quote_name = connection.ops.quote_name
        table = quote_name(self._table_name)
        until = datetime.max if backend_timeout is None else datetime.fromtimestamp(backend_timeout, tz=UTC)
        # As Django's set: whole seconds, the value pickled and base64-encoded into the text column.
        expires = connection.ops.adapt_datetimefield_value(until.replace(microsecond=0))
        encoded = base64.b64encode(pickle.dumps(value, self.pickle_protocol)).decode("latin1")
        with connection.cursor() as cursor:
            if next(self._sets) % self._cull_every == 0:
                cursor.execute(f"SELECT COUNT(*) FROM {table}")
                entries = cursor.fetchone()[0]
                if entries > self._max_entries:
                    # Django's own culling (expired rows, then a share of the rest).
                    now = tz_now().replace(microsecond=0)
                    self._cull(db, cursor, now, entries)  # type: ignore[attr-defined]  # real, missing from django-stubs

            # One statement, atomic on the key's row: two processes writing the same key at once
            # both succeed and the later write wins, as with Django's SELECT-then-UPDATE (which
            # could instead fail silently on the race's duplicate INSERT).
            upsert = (
                f"INSERT INTO {table} ({quote_name('cache_key')}, {quote_name('value')}, {quote_name('expires')})"
                " VALUES (%s, %s, %s) ON DUPLICATE KEY UPDATE"
                f" {quote_name('value')} = VALUES({quote_name('value')}),"
                f" {quote_name('expires')} = VALUES({quote_name('expires')})"
            )
            try:
                if connection.in_atomic_block:
                    # A savepoint: a refused write (a deadlock rolls back InnoDB's whole transaction)
                    # must not break the caller's transaction. Outside one, the statement is alone.
                    with transaction.atomic(using=db):
                        cursor.execute(upsert, [key, encoded, expires])
                else:
                    cursor.execute(upsert, [key, encoded, expires])
            except DatabaseError as exc:
                # As Django's set: the write is dropped (the request is served, uncounted), never a 500.
                logger.warning(
                    "throttle write dropped", extra={"event": "throttle_write_dropped", "error": type(exc).__name__}
                )
