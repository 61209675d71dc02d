"""The vschema handed to the local cluster is the one the models give, and vtgate serves it."""

from __future__ import annotations

import json

from django.conf import settings
from django.db import connection

from sharding import vschema


def test_the_vschema_files_are_the_models_vschema():
    root = settings.BASE_DIR / "services" / "vitess" / "schema"
    on_disk = {path.parent.name: json.loads(path.read_text()) for path in root.glob("*/vschema.json")}
    assert on_disk == vschema.vschemas()


def test_vtgate_has_every_table_on_its_keyspace():
    with connection.cursor() as cursor:
        assert vschema.missing_statements(cursor) == []
        cursor.execute("USE `@primary`")
