"""`manage.py migrate_vitess`: the vschema and Django's migrations on every Vitess target.

DATABASE_URL names vtgate (any database; DATABASE_VITESS=1). The vschema comes first (the
tables' routing, `sharding.vschema`), then `migrate` runs once per target: the unsharded
keyspace, then each shard of the tenant keyspace on its own (sharding.routers keeps each
table on its side). Idempotent: run it at every deploy, before the loops start.
"""

import os
import subprocess
import sys

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from sharding import vschema
from sharding.targets import shard_targets, target_url


class Command(BaseCommand):
    help = "Apply the vschema and run migrate on the unsharded keyspace and on each shard."

    def handle(self, *args, **options):
        if not settings.DATABASE_VITESS:
            raise CommandError("DATABASE_VITESS is off: DATABASE_URL is not vtgate (use manage.py migrate)")
        with connection.cursor() as cursor:
            statements = vschema.missing_statements(cursor)
            for statement in statements:
                cursor.execute(statement)
        self.stdout.write(f"vschema: {len(statements)} change(s)")
        for target in [settings.VITESS_GLOBAL_KEYSPACE, *shard_targets()]:
            self.stdout.write(f"migrate: {target}")
            env = {**os.environ, "DATABASE_URL": target_url(target)}
            done = subprocess.run([sys.executable, sys.argv[0], "migrate", "--noinput"], env=env, check=False)
            if done.returncode:
                raise CommandError(f"migrate on {target} failed (exit {done.returncode})")
