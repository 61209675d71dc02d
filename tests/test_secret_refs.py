"""The `secret_ref` grammar: one rule, and the API, the secrets store and the executor agree on every name."""

import pytest

from domain.secret_refs import MAX_SECRET_REF_LENGTH, SecretRefError, is_secret_ref, validate_secret_ref
from vault.services import secret_put
from workers.executor.secrets import SecretUnavailable, TenantSecrets

TASKS = "/v1/tasks"


def _create(client, *, secret_ref):
    body = {
        "name": "n",
        "schedule": {"cron": "*/5 * * * *", "timezone": "UTC"},
        "http": {"url": "https://example.com/hook"},
        "secret_ref": secret_ref,
    }
    return client.post(TASKS, body, format="json")


# (name, admitted)
NAMES = [
    ("hook-token", True),
    ("a", True),
    ("9lives", True),
    ("Billing.Webhook_Signing-2", True),
    ("a..b", True),  # a file name, not a path: no separator
    ("x" * MAX_SECRET_REF_LENGTH, True),
    ("x" * (MAX_SECRET_REF_LENGTH + 1), False),
    ("", False),
    ("-leading", False),
    ("_leading", False),
    (".hidden", False),
    ("..", False),
    ("../etc/passwd", False),
    ("a/b", False),
    ("a\\b", False),
    ("vault:hooks", False),
    ("me@vault", False),
    ("a+b", False),
    ("a%2Fb", False),
    ("has space", False),
    ("caf\u00e9", False),
    ("\uff41", False),  # fullwidth 'a': a letter to Unicode, not to the grammar
]


@pytest.mark.parametrize(("name", "admitted"), NAMES)
def test_the_grammar_admits_exactly_the_names_in_the_table(name, admitted):
    assert is_secret_ref(name) is admitted
    if admitted:
        assert validate_secret_ref(name) == name
    else:
        with pytest.raises(SecretRefError, match="letters, digits"):
            validate_secret_ref(name)


@pytest.mark.parametrize("name", ["tok\n", " tok", "tok\t"])
def test_edge_whitespace_is_outside_the_grammar(name):
    assert is_secret_ref(name) is False


@pytest.mark.parametrize("value", [None, 5, b"hook-token", ["hook-token"]])
def test_a_ref_that_is_not_a_string_is_refused(value):
    assert is_secret_ref(value) is False
    with pytest.raises(SecretRefError):
        validate_secret_ref(value)


@pytest.mark.django_db
@pytest.mark.usefixtures("fake_dns")
@pytest.mark.parametrize(("name", "admitted"), NAMES)
def test_the_api_accepts_exactly_the_names_the_executor_can_resolve(tenant_client, tmp_path, name, admitted):
    # Every name the grammar admits has a stored secret (and a mounted one), so only the grammar can refuse it.
    if admitted:
        secret_put(tenant_id="tenant-a", name=name, value="Bearer t0ken")
    else:
        (tmp_path / "tenant-a").mkdir()
        (tmp_path / "tenant-a" / "x").write_text("Bearer t0ken")  # a file any path trick might reach
    response = _create(tenant_client("tenant-a"), secret_ref=name)
    secrets = TenantSecrets(tmp_path)
    secrets.prefetch([("tenant-a", name)])
    if admitted:
        assert response.status_code == 201, response.content
        assert response.json()["secret_ref"] == name
        assert secrets.get("tenant-a", name) == "Bearer t0ken"
    else:
        assert response.status_code == 400, response.content
        assert "secret_ref" in response.json()["errors"]
        with pytest.raises(SecretUnavailable):
            secrets.get("tenant-a", name)


@pytest.mark.django_db
@pytest.mark.usefixtures("fake_dns")
def test_the_api_trims_edge_whitespace_before_the_grammar_so_it_stores_a_resolvable_name(tenant_client):
    secret_put(tenant_id="tenant-a", name="tok", value="Bearer t0ken")
    response = _create(tenant_client("tenant-a"), secret_ref=" tok\n")
    assert response.status_code == 201, response.content
    assert response.json()["secret_ref"] == "tok"
    secrets = TenantSecrets()
    secrets.prefetch([("tenant-a", "tok")])
    assert secrets.get("tenant-a", "tok") == "Bearer t0ken"
