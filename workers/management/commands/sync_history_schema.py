"""`manage.py sync_history_schema`: create the Cassandra keyspace and history tables.

Idempotent; run it at deploy time before the archiver. With the SQL history
store the tables come from `manage.py migrate` and this command says so.
"""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from history.cassandra_store import connect, schema_statements


class Command(BaseCommand):
    help = "Create (or update the TTL of) the Cassandra keyspace and history tables."

    def add_arguments(self, parser):
        parser.add_argument(
            "--replication-factor",
            type=int,
            default=None,
            help="copies of each row (3 in production); default: CASSANDRA_REPLICATION",
        )
        parser.add_argument(
            "--datacenter",
            default="",
            help="NetworkTopologyStrategy in this datacenter (without it: SimpleStrategy, for development)",
        )
        parser.add_argument("--print", action="store_true", help="print the CQL instead of running it")

    def handle(self, *args, **options):
        factor = options["replication_factor"]
        if factor is not None and factor < 1:
            raise CommandError("--replication-factor must be at least 1")
        replication: dict[str, object]
        if options["datacenter"]:
            replication = {"class": "NetworkTopologyStrategy", options["datacenter"]: factor or 3}
        elif factor is not None:
            replication = {"class": "SimpleStrategy", "replication_factor": factor}
        else:
            replication = dict(settings.CASSANDRA_REPLICATION)
        statements = schema_statements(
            keyspace=settings.CASSANDRA_KEYSPACE, ttl_seconds=settings.HISTORY_TTL_SECONDS, replication=replication
        )
        if options["print"]:
            self.stdout.write(";\n\n".join(statements) + ";")
            return
        if not settings.CASSANDRA_HOSTS:
            raise CommandError(
                "CASSANDRA_HOSTS is empty: nothing to sync (the SQL history store's table comes from migrate)"
            )
        session = connect(hosts=list(settings.CASSANDRA_HOSTS), keyspace=None)
        try:
            for statement in statements:
                session.execute(statement)
        finally:
            session.cluster.shutdown()
        self.stdout.write(f"keyspace {settings.CASSANDRA_KEYSPACE}: job_history and job_by_id are in place")
