"""Django's MySQL backend behind vtgate (DATABASE_VITESS=1; ENGINE `sharding.backend`).

vtgate advertises the shards' MariaDB version, so Django would send MariaDB-only syntax that
vtgate's parser refuses: INSERT ... RETURNING, and database/prepared.py MariaDB's
`EXECUTE name USING <values>` (vtgate takes user variables there, and plans a prepared
text itself, so the shards parse it anyway). Everything else is the stock backend.
"""

from django.db.backends.mysql import base, features


class DatabaseFeatures(features.DatabaseFeatures):
    can_return_columns_from_insert = False
    can_return_rows_from_bulk_insert = False
    executes_prepared_with_values = False  # read by database/prepared.py


class DatabaseWrapper(base.DatabaseWrapper):
    features_class = DatabaseFeatures
