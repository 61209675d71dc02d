"""gunicorn's access line: none built unless an access log is named (the API's own is Django's)."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import pytest
from django.conf import settings
from gunicorn import glogging

from api.gunicorn_logger import Logger
from tests.serving import get, gunicorn, production_env


class _Untouchable:
    """A request or response the logger must not read."""

    def __getattr__(self, name: str):
        raise AssertionError(f"read {name}")


def _logger(cls: type[glogging.Logger], **cfg) -> glogging.Logger:
    # Built without __init__: its setup() would configure this process's logging.
    logger = cls.__new__(cls)
    defaults = {"accesslog": None, "syslog": False, "disable_redirect_access_to_syslog": False}
    logger.cfg = SimpleNamespace(
        logconfig=None, logconfig_dict={"version": 1}, logconfig_json=None, **{**defaults, **cfg}
    )
    return logger


def test_without_an_access_log_no_line_is_built():
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/v1/tasks"}
    # gunicorn's own logger builds the line's fields because a logging dictionary is configured...
    with pytest.raises(AssertionError, match="read"):
        _logger(glogging.Logger).access(_Untouchable(), _Untouchable(), environ, 0.001)
    # ... ours does not look at the request at all.
    _logger(Logger).access(_Untouchable(), _Untouchable(), environ, 0.001)


@pytest.mark.parametrize(
    "cfg",
    [{"accesslog": "/var/log/access.log"}, {"accesslog": "-"}, {"syslog": True}],
    ids=["file", "stdout", "syslog"],
)
def test_a_named_access_log_or_syslog_still_gets_gunicorns_line(cfg):
    with pytest.raises(AssertionError, match="read"):
        _logger(Logger, **cfg).access(_Untouchable(), _Untouchable(), {}, 0.001)


def test_syslog_without_access_lines_builds_none():
    _logger(Logger, syslog=True, disable_redirect_access_to_syslog=True).access(_Untouchable(), _Untouchable(), {}, 0.1)


def test_gunicorn_conf_names_it():
    command = [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "--print-config", "jobsched_project.wsgi"]
    env = production_env(THROTTLE_CACHE_URL="locmemcache://")
    result = subprocess.run(command, cwd=settings.BASE_DIR, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    config = dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)
    assert {key.strip(): value.strip() for key, value in config.items()}["logger_class"] == "api.gunicorn_logger.Logger"


@pytest.mark.django_db(transaction=True)
def test_with_it_an_operators_access_log_is_written(tmp_path):
    access_log = tmp_path / "gunicorn-access.log"
    env = production_env(THROTTLE_CACHE_URL="locmemcache://", GUNICORN_CMD_ARGS=f"--access-logfile {access_log}")
    log = tmp_path / "gunicorn.log"
    with gunicorn(env, log) as base:
        assert get(f"{base}/v1/tasks", headers={"X-Request-Id": "rid-g"})[0] == 401
    assert "Using worker: sync" in log.read_text()
    lines = [line for line in access_log.read_text().splitlines() if "/v1/tasks" in line]
    assert len(lines) == 1 and '"GET /v1/tasks HTTP/1.1" 401' in lines[0], access_log.read_text()
