"""Crontab files as entries (pure): comments, variables, CRON_TZ, nicknames, keys, and every bad line named."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobsched_client.crontab.parsing import CrontabError, derived_key, parse_crontab

SAMPLES = Path(__file__).parent / "crontabs"


def sample(name: str) -> str:
    return (SAMPLES / name).read_text().replace("RECEIVER", "8000")


def test_a_real_world_crontab_becomes_one_entry_per_line() -> None:
    crontab = parse_crontab(sample("ops.cron"))
    summary = [(e.line, e.cron, e.timezone, e.call.method, e.key) for e in crontab.entries]
    assert summary == [
        (6, "*/5 * * * *", "UTC", "POST", "POST http://127.0.0.1:8000/cache/warm"),
        (10, "15 9 * * mon-fri", "Europe/Madrid", "POST", "POST http://127.0.0.1:8000/reports?team=ops"),
        (12, "@hourly", "Europe/Madrid", "GET", "GET http://127.0.0.1:8000/health/deep"),
        (14, "@daily", "Europe/Madrid", "POST", "nightly-vacuum"),
        (15, "0 0 1 * *", "Europe/Madrid", "DELETE", "DELETE http://127.0.0.1:8000/tmp?older=30d%20ago"),
    ]
    assert crontab.variables["MAILTO"] == "ops@example.com"
    assert crontab.entries[1].call.timeout_seconds == 120
    assert crontab.entries[1].call.max_attempts == 3


def test_every_bad_line_is_reported_with_its_number_and_why() -> None:
    with pytest.raises(CrontabError) as caught:
        parse_crontab(sample("bad.cron"))
    lines = {problem.line: problem.reason for problem in caught.value.problems}
    assert sorted(lines) == [3, 4, 5, 6, 7, 8, 9, 10]
    assert "@reboot" in lines[3]
    assert "not an HTTP call" in lines[4]
    assert "'|'" in lines[5]
    assert "JOBSCHED_SECRET_REF" in lines[6]
    assert "from a file" in lines[7]
    assert "\\%" in lines[8]
    assert "'curl' is not a cron time field" in lines[9]
    assert "shell expansion" in lines[10]


def test_repeated_calls_get_numbered_keys_and_explicit_keys_must_differ() -> None:
    text = "@hourly GET https://x.test/a\n@daily GET https://x.test/a\n"
    assert [e.key for e in parse_crontab(text).entries] == ["GET https://x.test/a", "GET https://x.test/a #2"]
    clash = "# jobsched: key=k\n@hourly GET https://x.test/a\n# jobsched: key=k\n@daily GET https://x.test/b\n"
    with pytest.raises(CrontabError, match="line 4: key 'k' is also line 2's"):
        parse_crontab(clash)


def test_secret_ref_variable_applies_to_the_lines_below_until_reset() -> None:
    text = "JOBSCHED_SECRET_REF=api-token\n@hourly GET https://x.test/a\nJOBSCHED_SECRET_REF=\n@daily GET https://x.test/b\n"
    assert [e.secret_ref for e in parse_crontab(text).entries] == ["api-token", None]


def test_long_urls_get_a_bounded_hashed_key() -> None:
    key = derived_key("GET", "https://x.test/" + "a" * 300)
    assert len(key) == 120
    assert key != derived_key("GET", "https://x.test/" + "a" * 301)
