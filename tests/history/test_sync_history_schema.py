"""manage.py sync_history_schema: the CQL it would run, and a clear refusal without a cluster."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command


def test_print_shows_the_keyspace_and_both_tables_with_the_configured_ttl(settings):
    settings.HISTORY_TTL_SECONDS = 86400
    out = io.StringIO()

    call_command("sync_history_schema", "--print", "--replication-factor", "3", "--datacenter", "dc1", stdout=out)

    text = out.getvalue()
    assert (
        "CREATE KEYSPACE IF NOT EXISTS jobsched WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 3}"
        in text
    )
    assert "CREATE TABLE IF NOT EXISTS jobsched.job_history" in text
    assert "CREATE TABLE IF NOT EXISTS jobsched.job_by_id" in text
    assert "default_time_to_live = 86400" in text


def test_without_cassandra_hosts_it_refuses_and_points_at_migrate(settings):
    settings.CASSANDRA_HOSTS = []

    with pytest.raises(CommandError, match="migrate"):
        call_command("sync_history_schema")


def test_a_replication_factor_below_one_is_refused():
    with pytest.raises(CommandError, match="replication-factor"):
        call_command("sync_history_schema", "--print", "--replication-factor", "0")
