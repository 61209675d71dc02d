"""Property: no input makes the task API answer 5xx, and every error is problem+json.

Hypothesis builds task bodies that are mostly well-shaped with hostile leaves
(wrong types, huge numbers, control characters, lone surrogates, odd URLs,
crons, zones and headers), raw non-JSON bodies, and odd headers, ids, cursors
and ETags, and drives every verb on real MariaDB through Django's test client
(which re-raises any server exception, so a 500 fails loudly).

Run: `pytest tests/tasks/test_api_fuzz.py --hypothesis-show-statistics`;
FUZZ_EXAMPLES (default 300) sets the number of cases per test.
"""

import json
import os

import pytest
from django.test import override_settings
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fake_dns")]

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "300"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
TASKS = "/v1/tasks"

json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
    st.sampled_from(["", " ", "\x00", "\ud800", "\r\n", "9" * 400, "0", "-1", "1e309", "null"]),
)
json_any = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=8,
)


def maybe(valid, extra=json_any):
    """Mostly the well-shaped value, sometimes anything: deep enough to reach the database."""
    return st.one_of(*[valid] * 8, extra)


urls = maybe(
    st.one_of(
        st.sampled_from(
            ["https://example.com/hook", "http://api.example.org/x?y=1", "https://unresolved.example.com:443/",
             "http://10.0.0.1/", "http://[::1]:80/", "https://rebind.example.net/", "http://0x7f.1/", "https://a@b.c/"]
        ),
        st.from_regex(r"\Ahttps?://[a-z0-9.\-\[\]:@%]{0,24}(/[ -~]{0,20})?\Z"),
        st.text(max_size=30),
    )
)  # fmt: skip
crons = maybe(
    st.one_of(
        st.sampled_from(["* * * * *", "0 9 * * 1-5", "@hourly", "0 0 30 2 *", "*/7 1-5 L * *", "0 0 * * 5#3"]),
        st.from_regex(r"\A[0-9*/,\-LW#? A-Z@]{0,30}\Z"),
    )
)
zones = maybe(st.sampled_from(["UTC", "Europe/Madrid", "America/New_York", "Asia/Kathmandu", "localtime", "Nope/No"]))
run_ats = maybe(
    st.one_of(
        st.sampled_from(["2030-01-01T00:00:00Z", "2030-01-01T00:00:00", "2000-01-01T00:00:00+14:00"]),
        st.datetimes().map(lambda d: d.isoformat() + "Z"),
        st.text(max_size=30),
    )
)
schedules = maybe(
    st.one_of(
        st.fixed_dictionaries({"cron": crons}, optional={"timezone": zones}),
        st.fixed_dictionaries({"run_at": run_ats}, optional={"cron": crons, "timezone": zones}),
    )
)
header_names = st.one_of(
    st.sampled_from(["X-A", "Authorization", "proxy-x", "Host", "TE", "a b", ""]), st.text(max_size=12)
)
headers = maybe(st.dictionaries(header_names, maybe(st.text(max_size=20)), max_size=5))
https = maybe(
    st.fixed_dictionaries(
        {"url": urls},
        optional={
            "method": maybe(
                st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE", "get"])
            ),
            "headers": headers,
            "body": maybe(st.text(max_size=50)),
        },
    )
)
numbers = maybe(st.one_of(*[st.integers(min_value=1, max_value=9)] * 6, st.integers(min_value=-5, max_value=100_000)))
task_bodies = maybe(
    st.fixed_dictionaries(
        {
            "name": maybe(st.text(st.characters(categories=["L", "N", "P", "Zs"]), min_size=1, max_size=30)),
            "schedule": schedules,
            "http": https,
        },
        optional={
            "timeout_seconds": numbers,
            "max_attempts": numbers,
            "backoff_base_seconds": numbers,
            "priority": numbers,
            "secret_ref": maybe(st.one_of(st.none(), st.from_regex(r"\A[a-z0-9][a-z0-9._-]{0,20}\Z"))),
            "id": json_any,
            "version": json_any,
        },
    )
)
raw_bodies = st.one_of(
    st.binary(max_size=60),
    st.text(max_size=60).map(str.encode),
    st.integers(1, 200_000).map(lambda depth: b"[" * depth + b"]" * depth),
    st.integers(1, 200_000).map(lambda depth: b'{"a":' * depth + b"1" + b"}" * depth),
)
idempotency_keys = st.one_of(
    st.none(), st.sampled_from(["k1", "k2"]), st.text(alphabet=st.characters(max_codepoint=255), max_size=20)
)
etags = st.one_of(st.none(), st.sampled_from(['"1"', '"2"', 'W/"1"', "*", '"1", "2"', "1"]), st.text(max_size=12))
ids = st.one_of(
    st.sampled_from(["CREATED", "CREATED", "00000000-0000-7000-8000-000000000000"]), st.text(min_size=1, max_size=40)
)


def _latin1(text):
    """Header values travel as latin-1 in WSGI: drop what cannot."""
    return text.encode("latin-1", "ignore").decode("latin-1") if text is not None else None


def _check(response):
    event(f"HTTP {response.status_code}")  # shown by --hypothesis-show-statistics
    assert response.status_code < 500, response.content
    if response.status_code >= 400:
        assert response["Content-Type"] == "application/problem+json", response.content
        assert response.json()["status"] == response.status_code


def _post_json(client, url, data, **extra):
    """Send ASCII JSON so hostile strings (lone surrogates included) reach the server as escapes."""
    return client.generic("POST", url, json.dumps(data), content_type="application/json", **extra)


@pytest.fixture
def unthrottled():
    with override_settings(TENANT_THROTTLE_RATE="", ANONYMOUS_THROTTLE_RATE=""):
        yield


@FUZZ
@given(body=task_bodies, key=idempotency_keys)
def test_create_never_answers_5xx(owner, unthrottled, body, key):
    extra = {} if key is None else {"HTTP_IDEMPOTENCY_KEY": _latin1(key)}
    _check(_post_json(owner, TASKS, body, **extra))


@FUZZ
@given(
    raw=raw_bodies,
    content_type=st.sampled_from(["application/json", "text/plain", "application/json; charset=latin-1"]),
)
def test_raw_bodies_never_answer_5xx(owner, unthrottled, raw, content_type):
    _check(owner.generic("POST", TASKS, raw, content_type=content_type))


@FUZZ
@given(patch=task_bodies, etag=etags, task_id=ids, verb=st.sampled_from(["patch", "get", "delete", "pause", "resume"]))
def test_every_verb_on_a_task_never_answers_5xx(owner, unthrottled, patch, etag, task_id, verb):
    created = _post_json(
        owner, TASKS, {"name": "f", "schedule": {"cron": "* * * * *"}, "http": {"url": "https://example.com/"}}
    )
    assert created.status_code == 201
    task_id = created.json()["id"] if task_id == "CREATED" else task_id
    url = f"{TASKS}/{task_id.replace('/', '%2F').replace('?', '%3F').replace('#', '%23')}"
    extra = {} if etag is None else {"HTTP_IF_MATCH": _latin1(etag)}
    if verb == "patch":
        response = owner.generic("PATCH", url, json.dumps(patch), content_type="application/json", **extra)
    elif verb in ("pause", "resume"):
        response = owner.post(f"{url}/{verb}", **extra)
    else:
        response = getattr(owner, verb)(url, **extra)
    _check(response)


@FUZZ
@given(
    limit=st.one_of(st.none(), st.none(), st.integers(-5, 500).map(str), st.text(max_size=6)),
    cursor=st.one_of(st.none(), st.text(max_size=40)),
)
def test_list_never_answers_5xx(owner, unthrottled, limit, cursor):
    query = {name: value for name, value in (("limit", limit), ("cursor", cursor)) if value is not None}
    _check(owner.get(TASKS, query))
