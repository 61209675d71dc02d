"""One row's INSERT for a model instance, its text and its fields' conversions worked out once per model.

`instance.save(force_insert=True)` compiles the INSERT anew for every row: for a task's 50
columns that took more CPU than the statement's round trip (docs/benchmarks/api.md). This
writes the same values (each field's `pre_save`, then `get_db_prep_save`, as Django's
compiler does) with a text made once. A value of a stock field whose conversion leaves it
as it is (a str of a CharField, an int of an IntegerField, a bool of a BooleanField) is
written as it is, and an aware datetime of a DateTimeField and a dict or list of a JSONField go
straight to the backend's adaptation: what Django's field methods do to them, without the calls
between.

It sends no `pre_save`/`post_save` signal and checks no related object, so it is for models
with a primary key set before the insert (a default such as domain.ids.new_id) that nothing
listens to; it refuses a model with a listener or a generated field, and a value that is an
expression (a database default, F()), rather than write something else than `save()` would.
"""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections, models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import debug_transaction
from django.db.models import signals

from database.backend.connection import Connection as HoldingConnection

# The methods between a field's value and what the driver gets; a field whose class keeps the
# stock class's every one converts as that class does.
_CONVERSIONS = ("pre_save", "get_db_prep_save", "get_db_prep_value", "get_prep_value", "to_python")
# Stock classes and the exact value types they write unchanged (bool is not an int here).
_UNCHANGED: tuple[tuple[type[models.Field[Any, Any]], type], ...] = (
    (models.CharField, str),
    (models.TextField, str),
    (models.IntegerField, int),
    (models.BooleanField, bool),
)
_DATETIME = "datetime"
_JSON = "json"
_AS_DJANGO = "field"
_UNSET = object()


def _stock(field: models.Field[Any, Any], base: type[models.Field[Any, Any]]) -> bool:
    return isinstance(field, base) and all(getattr(type(field), name) is getattr(base, name) for name in _CONVERSIONS)


def _plan(field: models.Field[Any, Any]) -> tuple[str, type | str]:
    """(attname, the value type written unchanged, or _DATETIME, or _AS_DJANGO: Django's own methods)."""
    for base, kind in _UNCHANGED:
        if _stock(field, base):
            return field.attname, kind
    # auto_now and auto_now_add take pre_save's clock.
    if (
        isinstance(field, models.DateTimeField)
        and _stock(field, models.DateTimeField)
        and not (field.auto_now or field.auto_now_add)
    ):
        return field.attname, _DATETIME
    if _stock(field, models.JSONField):
        return field.attname, _JSON
    return field.attname, _AS_DJANGO


@functools.cache
def _insert_sql(
    model: type[models.Model],
) -> tuple[str, tuple[models.Field[Any, Any], ...], tuple[tuple[str, type | str], ...]]:
    fields = tuple(model._meta.concrete_fields)
    if any(getattr(field, "generated", False) for field in fields):
        raise TypeError(f"{model.__name__}: insert_row does not write generated fields; use save()")
    columns = ", ".join(connection.ops.quote_name(str(field.column)) for field in fields)
    values = ", ".join(["%s"] * len(fields))
    sql = f"INSERT INTO {connection.ops.quote_name(model._meta.db_table)} ({columns}) VALUES ({values})"
    return sql, fields, tuple(_plan(field) for field in fields)


def row_params(instance: models.Model, db: BaseDatabaseWrapper | None = None) -> list[Any]:
    """The values `save()` would send for `instance`'s columns, in _insert_sql's order, for `db`
    (the default connection when None)."""
    if db is None:
        db = connections[DEFAULT_DB_ALIAS]
    _, fields, plans = _insert_sql(type(instance))
    state = instance.__dict__
    ops = db.ops
    adapt_datetime, adapt_json = ops.adapt_datetimefield_value, ops.adapt_json_value
    params: list[Any] = []
    for field, (attname, kind) in zip(fields, plans, strict=True):
        if kind is not _AS_DJANGO:
            value = state.get(attname, _UNSET)
            if value is None or type(value) is kind:
                params.append(value)
                continue
            if kind is _DATETIME and type(value) is datetime and value.utcoffset() is not None:
                params.append(adapt_datetime(value))
                continue
            if kind is _JSON and type(value) in (dict, list) and isinstance(field, models.JSONField):
                params.append(adapt_json(value, field.encoder))
                continue
        value = field.pre_save(instance, True)
        if hasattr(value, "resolve_expression"):
            raise TypeError(f"{type(instance).__name__}: a field's value is an expression; use save()")
        params.append(field.get_db_prep_save(value, db))
    return params


def insert_row(instance: models.Model, *, deferred: bool = False) -> None:
    """INSERT `instance` as `instance.save(force_insert=True)` would, on the default connection.

    `deferred`: inside `atomic()` on the project's backend, the INSERT goes with the transaction's
    next statement or its COMMIT (database/backend/connection.py), saving its own round trip; its
    error (a duplicate key) is raised there, and the transaction rolls back. Elsewhere it is sent at
    once. Only for a row that waits on no lock: a key made here, no unique value another
    transaction may be writing, no foreign key. A held INSERT that waited could be a deadlock's
    victim, which ends the transaction, and the statements sent with it would commit on their own.
    """
    model = type(instance)
    sql, _, _ = _insert_sql(model)
    if instance.pk is None:
        raise ValueError(f"{model.__name__}: insert_row needs the primary key set before the insert")
    if signals.pre_save.has_listeners(model) or signals.post_save.has_listeners(model):
        raise TypeError(f"{model.__name__}: something listens to its saves; use save()")
    db = connections[DEFAULT_DB_ALIAS]  # the proxy `connection` looks it up on every attribute read
    params = row_params(instance, db)
    driver = db.connection
    if deferred and db.in_atomic_block and isinstance(driver, HoldingConnection):
        db.validate_no_broken_transaction()
        statement = driver.hold(sql, params)
        if db.queries_logged:  # as the cursor would log it
            with debug_transaction(db, statement.decode(driver.encoding, errors="replace")):
                pass
    else:
        with db.cursor() as cursor:
            cursor.execute(sql, params)
    instance._state.adding = False
    instance._state.db = db.alias
