"""Django's MySQL backend behind vtgate (DATABASE_VITESS=1; ENGINE `sharding.backend`).

vtgate advertises the shards' MariaDB version, so Django would send MariaDB-only syntax that
vtgate's parser refuses: INSERT ... RETURNING. Everything else is the stock backend.
"""

from django.db.backends.mysql import base, features


class DatabaseFeatures(features.DatabaseFeatures):
    can_return_columns_from_insert = False
    can_return_rows_from_bulk_insert = False


class DatabaseWrapper(base.DatabaseWrapper):
    features_class = DatabaseFeatures
