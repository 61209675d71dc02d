"""The default secrets adapter: a mounted directory, then the environment; names, never paths."""

from __future__ import annotations

import pytest

from workers.executor.secrets import MountedSecrets, SecretUnavailable


def test_a_secret_is_read_from_its_file_in_the_mounted_directory(tmp_path):
    (tmp_path / "hook-token").write_text("Bearer abc\n")
    assert MountedSecrets(tmp_path, environ={}).get("hook-token") == "Bearer abc"


def test_the_environment_is_the_fallback(tmp_path):
    secrets = MountedSecrets(tmp_path, environ={"JOBSCHED_SECRET_HOOK_TOKEN": "Bearer env"})
    assert secrets.get("hook-token") == "Bearer env"
    assert MountedSecrets(None, environ={"JOBSCHED_SECRET_HOOK_TOKEN": "Bearer env"}).get("hook-token") == "Bearer env"


def test_a_missing_secret_is_unavailable(tmp_path):
    with pytest.raises(SecretUnavailable):
        MountedSecrets(tmp_path, environ={}).get("absent")


@pytest.mark.parametrize("ref", ["../etc/passwd", "a/b", ".hidden", "", "x" * 300, "tok\n"])
def test_a_ref_that_is_not_a_plain_name_is_refused(tmp_path, ref):
    with pytest.raises(SecretUnavailable):
        MountedSecrets(tmp_path, environ={}).get(ref)


@pytest.mark.parametrize("value", ["Bearer a\r\nX-Injected: 1", "", "   ", "caf\u00e9"])
def test_a_value_that_is_not_one_printable_line_is_refused(tmp_path, value):
    (tmp_path / "tok").write_bytes(value.encode())
    with pytest.raises(SecretUnavailable):
        MountedSecrets(tmp_path, environ={}).get("tok")


def test_a_value_is_held_to_the_same_rule_as_a_tasks_header_values(tmp_path):
    # One rule (tasks.headers.is_header_value): visible ASCII, inner spaces and tabs, one line.
    (tmp_path / "tok").write_bytes(b"Bearer\ta b")
    assert MountedSecrets(tmp_path, environ={}).get("tok") == "Bearer\ta b"
