"""A crontab command read as one HTTP call (pure)."""

from __future__ import annotations

import pytest

from jobsched_client.crontab.commands import FORM_CONTENT_TYPE, CommandError, HttpCommand, parse_command


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("curl https://x.test/a", HttpCommand("GET", "https://x.test/a")),
        ("/usr/bin/curl -fsS -XPOST https://x.test/a", HttpCommand("POST", "https://x.test/a")),
        (
            "curl -X PUT -H 'Content-Type: text/plain' --data-binary 'a b' 'https://x.test/a?b=1&c=2'",
            HttpCommand("PUT", "https://x.test/a?b=1&c=2", {"Content-Type": "text/plain"}, "a b"),
        ),
        (
            "curl -d a=1 -d b=2 https://x.test/f > /dev/null 2>&1",
            HttpCommand("POST", "https://x.test/f", {"Content-Type": FORM_CONTENT_TYPE}, "a=1&b=2"),
        ),
        (
            "curl -H 'Content-Type:' -d raw https://x.test/f",
            HttpCommand("POST", "https://x.test/f", {}, "raw"),
        ),
        (
            "curl --json '{\"a\": 1}' -m 2.5 --retry 3 -o /dev/null https://x.test/j",
            HttpCommand(
                "POST",
                "https://x.test/j",
                {"Content-Type": "application/json", "Accept": "application/json"},
                '{"a": 1}',
                timeout_seconds=3,
                max_attempts=4,
            ),
        ),
        ("post https://x.test/p 'hello world'", HttpCommand("POST", "https://x.test/p", body="hello world")),
        ("DELETE https://x.test/d", HttpCommand("DELETE", "https://x.test/d")),
    ],
)
def test_commands_become_http_calls(command: str, expected: HttpCommand) -> None:
    assert parse_command(command) == expected


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("curl https://x.test/a && curl https://x.test/b", "shell operator '&&'"),
        ("curl https://x.test/a?x=1&y=2", "shell operator '&'"),
        ("curl -u me:pw https://x.test/a", "-u is not supported"),
        ("curl -L https://x.test/a", "curl option -L is not supported"),
        ("curl -H 'User-Agent: me' https://x.test/a", "User-Agent"),
        ("curl https://x.test/a https://x.test/b", "one URL per line"),
        ("curl -X POST", "exactly one URL"),
        ("curl 'https://x.test/a", "cannot split"),
        ("curl -o out.html https://x.test/a", "only /dev/null"),
        ('curl "https://x.test/$(date)"', "shell expansion ($)"),
        ("GET ftp://x.test/a", "not an http(s) URL"),
        ("POST https://x.test/a one two", "plain form"),
        ("wget https://x.test/a", "is not an HTTP call"),
    ],
)
def test_commands_that_are_not_one_http_call_are_refused_with_the_reason(command: str, reason: str) -> None:
    with pytest.raises(CommandError, match=None) as caught:
        parse_command(command)
    assert reason in str(caught.value)


def test_a_dollar_sign_in_single_quotes_is_literal() -> None:
    assert parse_command('curl -d \'{"price": "$5"}\' https://x.test/a').body == '{"price": "$5"}'
