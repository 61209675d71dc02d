"""Tests for outbound.egress.url_rules: what a task URL may say, through the create-time check (fake DNS).

The tables go through ``EgressPolicy.check_url``, the entry point the API
calls, so a URL the parsers accept but whose destination is refused is
listed here too: the table is the create-time contract.
"""

from __future__ import annotations

import types

import pytest
import yarl

from outbound.egress import GENERIC_MESSAGE, MAX_URL_LENGTH, EgressDenied, ParsedTarget, TargetError, url_rules
from tests.tasks.egress_dns import POLICY, check, fake_resolve


@pytest.fixture(autouse=True)
def _no_remembered_url() -> None:
    """Each test reads its URLs afresh (one test skews a parser)."""
    url_rules._parse_text.cache_clear()


# --------------------------------------------------------------------------
# check_url: refused

REFUSED_URLS = [
    "ftp://public.example/",
    "file:///etc/passwd",
    "gopher://public.example:70/_",
    "javascript:alert(1)",
    "ws://public.example/",
    "//public.example/",
    "public.example/path",
    "http:public.example",
    "http:///public.example",
    "https://user:pw@public.example/",
    "https://user@public.example/",
    "https://@public.example/",
    "https://:@public.example/",
    "http://public.example\\@10.0.0.1/",
    "https://public.example:22/",
    "https://public.example:8080/",
    "https://public.example:0/",
    "https://public.example:65536/",
    "https://public.example:443:80/",
    "https://unresolvable.example:8443/",
    "http://localhost/",
    "http://LOCALHOST./",
    "http://api.localhost/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://printer.local/",
    "http://intranet/",
    "http://127.0.0.1/",
    "http://127.0.0.1:443/",
    "http://0.0.0.0/",
    "http://[::]/",
    "http://[::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[0:0:0:0:0:ffff:7f00:1]/",
    "http://[::ffff:169.254.169.254]/",
    "http://2130706433/",
    "http://017700000001/",
    "http://0x7f000001/",
    "http://0x7f.1/",
    "http://0177.0.0.1/",
    "http://127.1/",
    "http://127.0.1/",
    "http://0/",
    "http://8.8.8.8./",
    "http://08.8.8.8/",
    "http://%31%32%37.0.0.1/",
    "http://①②⑦.0.0.1/",
    "http://127\u30020.0.1/",  # ideographic full stop: both parsers make it 127.0.0.1
    "http://[::ffff:0.0.0.0]/",
    "http://169.254.169.254/latest/meta-data/",
    "http://10.0.0.1/",
    "http://172.16.0.1/",
    "http://172.31.255.254/",
    "http://192.168.1.1/",
    "http://100.64.0.1/",
    "http://100.100.100.200/",
    "http://198.18.0.1/",
    "http://224.0.0.1/",
    "http://255.255.255.255/",
    "http://[64:ff9b::a00:1]/",
    "http://[64:ff9b::7f00:1]/",
    "http://[2002:a00:1::]/",
    "http://[2002:c0a8:101::1]/",
    "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
    "http://[::a00:1]/",
    "http://[fd00:ec2::254]/",
    "http://[fe80::1]/",
    "http://[fe80::1%25eth0]/",
    "http://[ff02::1]/",
    "http://[ff0e::1]/",
    "http://[2001:db8::1]/",
    "http://internal.example/",
    "http://loopback.example/",
    "http://metadata.example/",
    "http://mixed.example/",
    "http://mixed-order.example/",
    "http://ula.example/",
    "http://mapped.example/",
    "http://nat64.example/",
    "http://garbage.example/",
    "http://127.0.0.1.nip.example/",
    "http://public.example/#frag",
    "http://public.example/#",
    "http://public.example#@10.0.0.1/",
    "http://public .example/",
    "http://public.example/\t",
    "http://public.example/\x00",
    "http://exa_mple..example/",
    "http://-." + "a" * 300 + ".example/",
    "https://public.example/" + "a" * MAX_URL_LENGTH,
    "",
]


@pytest.mark.parametrize("url", REFUSED_URLS)
def test_url_is_refused(url: str) -> None:
    with pytest.raises(TargetError) as excinfo:
        check(url)
    assert excinfo.value.field == "http.url"
    assert not isinstance(excinfo.value, EgressDenied)


@pytest.mark.parametrize("url", ["http://10.0.0.1/", "http://internal.example/", "http://mixed.example/"])
def test_refusal_message_never_names_an_address(url: str) -> None:
    with pytest.raises(TargetError) as excinfo:
        check(url)
    assert str(excinfo.value) == GENERIC_MESSAGE
    assert "10.0.0" not in str(excinfo.value)
    assert "10.0.0" in excinfo.value.reason


@pytest.mark.parametrize("url", [None, 42, b"http://public.example/"])
def test_non_string_url_is_refused(url: object) -> None:
    with pytest.raises(TargetError):
        POLICY.check_url(url, resolve=fake_resolve)  # type: ignore[arg-type]  # the wrong type is the point


@pytest.mark.parametrize("url", ["http://2130706433/", "http://0x7f.1/", "http://127.1/", "http://8.8.8.8./"])
def test_numeric_hosts_are_refused_as_ambiguous_without_being_resolved(url: str) -> None:
    # getaddrinfo would read these as IPv4 (127.0.0.1), while both URL parsers keep them as names.
    def exploding_resolve(host: str, port: int) -> list[str]:
        raise AssertionError("numeric host sent to the resolver")

    with pytest.raises(TargetError, match="canonical IP address"):
        POLICY.check_url(url, resolve=exploding_resolve)


def test_a_url_the_two_parsers_read_differently_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    real_url = url_rules.yarl.URL

    def skewed_url(url: str) -> yarl.URL:
        return real_url(url.replace("public.example", "other.example"))

    monkeypatch.setattr(url_rules, "yarl", types.SimpleNamespace(URL=skewed_url))
    with pytest.raises(TargetError) as excinfo:
        check("https://public.example/")
    assert "disagree" in excinfo.value.reason


def test_bad_port_says_which_ports_are_allowed() -> None:
    with pytest.raises(TargetError, match="80 or 443"):
        check("https://public.example:8080/")


# --------------------------------------------------------------------------
# check_url: accepted


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://8.8.8.8/", ParsedTarget("https", "8.8.8.8", 443, "https://8.8.8.8/")),
        ("http://8.8.8.8", ParsedTarget("http", "8.8.8.8", 80, "http://8.8.8.8")),
        (
            "https://[2001:4860:4860::8888]/x",
            ParsedTarget("https", "2001:4860:4860::8888", 443, "https://[2001:4860:4860::8888]/x"),
        ),
        (
            "https://public.example/hook?a=1",
            ParsedTarget("https", "public.example", 443, "https://public.example/hook?a=1"),
        ),
        ("https://Public.Example:443/", ParsedTarget("https", "public.example", 443, "https://public.example/")),
        ("HTTP://public.example/", ParsedTarget("http", "public.example", 80, "http://public.example/")),
        ("http://public.example:80/", ParsedTarget("http", "public.example", 80, "http://public.example/")),
        ("http://public6.example/", ParsedTarget("http", "public6.example", 80, "http://public6.example/")),
        ("https://public.example:80/", ParsedTarget("https", "public.example", 80, "https://public.example:80/")),
        (
            "https://unresolvable.example/",
            ParsedTarget("https", "unresolvable.example", 443, "https://unresolvable.example/"),
        ),
        ("https://empty.example/", ParsedTarget("https", "empty.example", 443, "https://empty.example/")),
        (
            "https://ñandú.example/",
            ParsedTarget("https", "xn--and-6ma2c.example", 443, "https://xn--and-6ma2c.example/"),
        ),
        ("https://[::ffff:8.8.8.8]/", ParsedTarget("https", "::ffff:808:808", 443, "https://[::ffff:8.8.8.8]/")),
    ],
)
def test_url_is_accepted_and_normalised(url: str, expected: ParsedTarget) -> None:
    assert check(url) == expected


# --------------------------------------------------------------------------
# port spellings: refused, never normalised

NON_CANONICAL_PORTS = [
    "https://public.example:+443/",
    "https://public.example:0443/",
    "https://public.example:00443/",
    "https://public.example:\u0664\u0664\u0663/",  # Arabic-Indic digits
    "https://public.example:\uff14\uff14\uff13/",  # full-width digits
    "https://public.example:/",
    "http://public.example:080/",
    "https://8.8.8.8:0443/",
    "https://[2001:4860:4860::8888]:0443/",
    "https://[2001:4860:4860::8888]:/",
]


@pytest.mark.parametrize("url", NON_CANONICAL_PORTS)
def test_a_non_canonical_port_spelling_is_refused(url: str) -> None:
    assert url_rules.port_spelling_problem(url) is not None
    with pytest.raises(TargetError, match="plain ASCII digits"):
        check(url)


@pytest.mark.parametrize(
    "url",
    [
        "https://public.example/",
        "https://public.example:443/",
        "http://public.example:80/x",
        "https://[2001:4860:4860::8888]:443/",
        "https://[2001:4860:4860::8888]/",
        "https://public.example/a:0443",
        "https://public.example?x=:0443",
    ],
)
def test_a_canonical_port_or_none_passes_the_spelling_check(url: str) -> None:
    assert url_rules.port_spelling_problem(url) is None
    check(url)


# --------------------------------------------------------------------------
# One read per URL text


def test_a_url_text_is_read_once_and_a_str_subclass_on_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    first = url_rules.parse_task_url("https://public.example/hook")
    reads = []
    real_url = url_rules.yarl.URL

    def counting_url(url: str) -> yarl.URL:
        reads.append(url)
        return real_url(url)

    monkeypatch.setattr(url_rules, "yarl", types.SimpleNamespace(URL=counting_url))
    assert url_rules.parse_task_url("https://public.example/hook") is first
    assert reads == []

    class Text(str):
        def __eq__(self, other: object) -> bool:  # equal to anything: never a cache key
            return True

        __hash__ = str.__hash__

    assert url_rules.parse_task_url(Text("https://other.example/")).host == "other.example"
    assert url_rules.parse_task_url(Text("https://public.example/hook")) == first
    assert reads == ["https://other.example/", "https://public.example/hook"]


def test_a_long_url_is_read_each_time_and_not_kept() -> None:
    long_url = "https://public.example/" + "a" * 600
    assert url_rules.parse_task_url(long_url) == url_rules.parse_task_url(long_url)
    assert url_rules.parse_task_url(long_url) is not url_rules.parse_task_url(long_url)
    assert url_rules._parse_text.cache_info().currsize == 0


def test_a_refused_url_is_refused_every_time() -> None:
    for _ in range(2):
        with pytest.raises(TargetError, match="fragment"):
            url_rules.parse_task_url("https://public.example/#x")
    assert url_rules._parse_text.cache_info().currsize == 0
