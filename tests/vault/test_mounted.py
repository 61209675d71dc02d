"""SECRETS_DIR: one directory per tenant, named so no tenant id can escape or share one."""

from __future__ import annotations

import pytest

from vault.mounted import read_mounted, secret_path, tenant_directory


@pytest.mark.parametrize(
    ("tenant", "directory"),
    [
        ("acme", "acme"),
        ("acme.io", "acme%2Eio"),
        ("..", "%2E%2E"),
        (".", "%2E"),
        ("org:eu", "org%3Aeu"),
        ("a@b_c-d", "a@b_c-d"),
    ],
)
def test_a_tenant_id_maps_to_one_safe_directory_name(tenant, directory):
    assert tenant_directory(tenant) == directory


def test_the_mapping_is_one_to_one_over_tricky_ids():
    ids = ["a.b", "a%2Eb", "a:b", "a_b", "A.b", ".", "..", "...", "a..b"]
    valid = [tenant for tenant in ids if "%" not in tenant]
    assert len({tenant_directory(tenant) for tenant in valid}) == len(valid)
    assert all("/" not in tenant_directory(tenant) and not tenant_directory(tenant).startswith(".") for tenant in valid)


@pytest.mark.parametrize("tenant", ["", "a/b", "acme ", "a%2Eb", "caf\u00e9"])
def test_an_id_outside_the_grammar_has_no_directory(tenant, tmp_path):
    with pytest.raises(ValueError):
        tenant_directory(tenant)
    assert secret_path(tmp_path, tenant, "tok") is None


def test_a_dot_dot_tenant_cannot_read_the_parent_directory(tmp_path):
    (tmp_path / "tok").write_text("Bearer at-the-root")
    (tmp_path / "inner").mkdir()
    assert read_mounted(tmp_path / "inner", "..", "tok") is None
    assert read_mounted(tmp_path, ".", "tok") is None
