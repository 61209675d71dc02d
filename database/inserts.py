"""One row's INSERT for a model instance, its text built once per model.

`instance.save(force_insert=True)` compiles the INSERT anew for every row: for a task's 50
columns that took more CPU than the statement's round trip (docs/benchmarks/api.md). This
writes the same values (each field's `pre_save`, then `get_db_prep_save`, as Django's
compiler does) with a text made once. It sends no `pre_save`/`post_save` signal and
checks no related object, so it is for models with a primary key set before the insert
(a default such as domain.ids.new_id) that nothing listens to; it refuses a model with a
listener or a generated field, and a value that is an expression (a database default, F()),
rather than write something else than `save()` would.
"""

from __future__ import annotations

import functools
from typing import Any

from django.db import connection, models
from django.db.models import signals


@functools.cache
def _insert_sql(model: type[models.Model]) -> tuple[str, tuple[models.Field[Any, Any], ...]]:
    fields = tuple(model._meta.concrete_fields)
    if any(getattr(field, "generated", False) for field in fields):
        raise TypeError(f"{model.__name__}: insert_row does not write generated fields; use save()")
    columns = ", ".join(connection.ops.quote_name(str(field.column)) for field in fields)
    values = ", ".join(["%s"] * len(fields))
    return f"INSERT INTO {connection.ops.quote_name(model._meta.db_table)} ({columns}) VALUES ({values})", fields


def insert_row(instance: models.Model) -> None:
    """INSERT `instance` as `instance.save(force_insert=True)` would, on the default connection."""
    model = type(instance)
    sql, fields = _insert_sql(model)
    if instance.pk is None:
        raise ValueError(f"{model.__name__}: insert_row needs the primary key set before the insert")
    if signals.pre_save.has_listeners(model) or signals.post_save.has_listeners(model):
        raise TypeError(f"{model.__name__}: something listens to its saves; use save()")
    values = [field.pre_save(instance, True) for field in fields]
    if any(hasattr(value, "resolve_expression") for value in values):
        raise TypeError(f"{model.__name__}: a field's value is an expression; use save()")
    params = [field.get_db_prep_save(value, connection) for field, value in zip(fields, values, strict=True)]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
    instance._state.adding = False
    instance._state.db = connection.alias
