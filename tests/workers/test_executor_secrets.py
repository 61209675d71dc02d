"""The executor's secrets: the job's own tenant's, by (tenant, name), one query per claimed batch."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from vault.services import secret_put
from workers.executor.secrets import SecretUnavailable, TenantSecrets

pytestmark = pytest.mark.django_db


def test_a_stored_secret_is_resolved_for_its_own_tenant_only():
    secret_put(tenant_id="tenant-b", name="hook-token", value="Bearer of-b")
    secrets = TenantSecrets()
    secrets.prefetch([("tenant-a", "hook-token"), ("tenant-b", "hook-token")])
    assert secrets.get("tenant-b", "hook-token") == "Bearer of-b"
    with pytest.raises(SecretUnavailable) as foreign:
        secrets.get("tenant-a", "hook-token")
    with pytest.raises(SecretUnavailable) as missing:
        secrets.get("tenant-b", "absent")
    assert str(foreign.value) == "secret not found"
    assert str(missing.value) == "secret not loaded for this claim"


def test_a_foreign_and_a_missing_secret_fail_alike_once_loaded():
    secret_put(tenant_id="tenant-b", name="b-only", value="Bearer of-b")
    secrets = TenantSecrets()
    secrets.prefetch([("tenant-a", "b-only"), ("tenant-a", "nowhere")])
    reasons = set()
    for name in ("b-only", "nowhere"):
        with pytest.raises(SecretUnavailable) as exc:
            secrets.get("tenant-a", name)
        reasons.add(str(exc.value))
    assert reasons == {"secret not found"}


def test_a_whole_claimed_batch_is_resolved_in_one_query():
    for n in range(20):
        secret_put(tenant_id=f"tenant-{n % 4}", name=f"token-{n}", value=f"Bearer value-{n}")
    secrets = TenantSecrets()
    pairs = [(f"tenant-{n % 4}", f"token-{n}") for n in range(20)] * 10  # 200 jobs naming 20 secrets
    with CaptureQueriesContext(connection) as queries:
        secrets.prefetch(pairs)
    assert len(queries) == 1
    with CaptureQueriesContext(connection) as queries:
        assert [secrets.get(*pair) for pair in pairs[:20]] == [f"Bearer value-{n}" for n in range(20)]
    assert len(queries) == 0  # get() runs on the event loop: never a query


def test_a_replaced_secret_is_sent_from_the_next_claim_on():
    secret_put(tenant_id="tenant-a", name="tok", value="Bearer old")
    secrets = TenantSecrets()
    secrets.prefetch([("tenant-a", "tok")])
    secret_put(tenant_id="tenant-a", name="tok", value="Bearer new")
    assert secrets.get("tenant-a", "tok") == "Bearer old"  # the claim already loaded it
    secrets.prefetch([("tenant-a", "tok")])
    assert secrets.get("tenant-a", "tok") == "Bearer new"


def test_prefetched_values_expire():
    now = [0.0]
    secrets = TenantSecrets(load=lambda pairs: {("t", "a"): "Bearer a", ("t", "b"): "Bearer b"}, clock=lambda: now[0])
    secrets.prefetch([("t", "a")])
    now[0] = 1000.0
    secrets.prefetch([("t", "b")])
    assert secrets.get("t", "b") == "Bearer b"
    with pytest.raises(SecretUnavailable):
        secrets.get("t", "a")


def test_a_mounted_secret_is_read_from_the_tenants_own_directory_only(tmp_path):
    (tmp_path / "tenant-a").mkdir()
    (tmp_path / "tenant-a" / "hook-token").write_text("Bearer mounted-a\n")
    (tmp_path / "shared-token").write_text("Bearer at-the-root")  # outside every namespace
    secrets = TenantSecrets(tmp_path)
    secrets.prefetch([("tenant-a", "hook-token"), ("tenant-b", "hook-token"), ("tenant-a", "shared-token")])
    assert secrets.get("tenant-a", "hook-token") == "Bearer mounted-a"
    for pair in [("tenant-b", "hook-token"), ("tenant-a", "shared-token")]:
        with pytest.raises(SecretUnavailable):
            secrets.get(*pair)


def test_a_stored_secret_wins_over_a_mounted_one(tmp_path):
    (tmp_path / "tenant-a").mkdir()
    (tmp_path / "tenant-a" / "tok").write_text("Bearer mounted")
    secret_put(tenant_id="tenant-a", name="tok", value="Bearer stored")
    secrets = TenantSecrets(tmp_path)
    secrets.prefetch([("tenant-a", "tok")])
    assert secrets.get("tenant-a", "tok") == "Bearer stored"


def test_the_environment_is_no_longer_a_source(monkeypatch):
    monkeypatch.setenv("JOBSCHED_SECRET_HOOK_TOKEN", "Bearer global")
    secrets = TenantSecrets()
    secrets.prefetch([("tenant-a", "hook-token")])
    with pytest.raises(SecretUnavailable):
        secrets.get("tenant-a", "hook-token")


@pytest.mark.parametrize("name", ["../tenant-b/tok", "a/b", ".hidden", "", "x" * 300, "tok\n"])
def test_a_ref_that_is_not_a_plain_name_is_refused(tmp_path, name):
    (tmp_path / "tenant-b").mkdir()
    (tmp_path / "tenant-b" / "tok").write_text("Bearer of-b")
    secrets = TenantSecrets(tmp_path)
    secrets.prefetch([("tenant-a", name)])
    with pytest.raises(SecretUnavailable):
        secrets.get("tenant-a", name)


@pytest.mark.parametrize("value", ["Bearer a\r\nX-Injected: 1", "", "   ", "caf\u00e9"])
def test_a_mounted_value_that_is_not_one_printable_line_is_refused(tmp_path, value):
    (tmp_path / "tenant-a").mkdir()
    (tmp_path / "tenant-a" / "tok").write_bytes(value.encode())
    secrets = TenantSecrets(tmp_path)
    secrets.prefetch([("tenant-a", "tok")])
    with pytest.raises(SecretUnavailable):
        secrets.get("tenant-a", "tok")


def test_a_value_is_held_to_the_same_rule_as_a_tasks_header_values(tmp_path):
    # One rule (outbound.headers.is_header_value): visible ASCII, inner spaces and tabs, one line.
    (tmp_path / "tenant-a").mkdir()
    (tmp_path / "tenant-a" / "tok").write_bytes(b"Bearer\ta b")
    secrets = TenantSecrets(tmp_path)
    secrets.prefetch([("tenant-a", "tok")])
    assert secrets.get("tenant-a", "tok") == "Bearer\ta b"
