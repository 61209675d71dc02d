"""Create the database named in DATABASE_URL if it is missing (used by `make run`)."""

import MySQLdb
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from database.reachability import redacted_database_url


class Command(BaseCommand):
    help = "Create the DATABASE_URL database (utf8mb4) if it does not exist."

    def handle(self, *args, **options):
        db = settings.DATABASES["default"]
        name = db["NAME"]
        if not name.replace("_", "").isalnum():
            raise CommandError(f"DATABASE_URL: refusing to create a database named {name!r}")
        try:
            conn = MySQLdb.connect(
                host=db["HOST"] or "127.0.0.1",
                port=int(db["PORT"] or 3306),
                user=db["USER"],
                password=db["PASSWORD"] or "",
                connect_timeout=5,
            )
        except MySQLdb.OperationalError as exc:
            raise CommandError(
                f"cannot reach the database at {redacted_database_url()} (DATABASE_URL): {exc.args[-1]}"
            ) from exc
        with conn.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE IF NOT EXISTS `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
        conn.close()
        self.stdout.write(f"database {name} ready")
