"""gunicorn's access line: built only when it would be written (the API's own is Django's)."""

from __future__ import annotations

import logging
import subprocess
import sys
import uuid
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


def _logger(cls: type[glogging.Logger], *, handler: bool = False, level: int = logging.INFO) -> glogging.Logger:
    # Built without __init__: its setup() would configure this process's logging. The access
    # logger is set up as gunicorn leaves it: no propagation, a handler only when a log is named.
    logger = cls.__new__(cls)
    logger.cfg = SimpleNamespace(
        accesslog=None,
        logconfig=None,
        logconfig_dict={"version": 1},
        logconfig_json=None,
        syslog=False,
        disable_redirect_access_to_syslog=False,
    )
    logger.access_log = logging.getLogger(f"tests.gunicorn.access.{uuid.uuid4().hex}")
    logger.access_log.propagate = False
    logger.access_log.setLevel(level)
    if handler:
        logger.access_log.addHandler(logging.NullHandler())
    return logger


def test_with_nowhere_to_write_no_line_is_built():
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/v1/tasks"}
    # gunicorn's own logger builds the line's fields because a logging dictionary is configured...
    with pytest.raises(AssertionError, match="read"):
        _logger(glogging.Logger).access(_Untouchable(), _Untouchable(), environ, 0.001)
    # ... ours does not look at the request at all.
    _logger(Logger).access(_Untouchable(), _Untouchable(), environ, 0.001)
    _logger(Logger, handler=True, level=logging.WARNING).access(_Untouchable(), _Untouchable(), environ, 0.001)


def test_a_logger_with_a_handler_still_gets_gunicorns_line():
    with pytest.raises(AssertionError, match="read"):
        _logger(Logger, handler=True).access(_Untouchable(), _Untouchable(), {}, 0.001)


def test_gunicorn_conf_names_it():
    command = [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "--print-config", "jobsched_project.wsgi"]
    env = production_env(THROTTLE_CACHE_URL="locmemcache://")
    result = subprocess.run(command, cwd=settings.BASE_DIR, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    config = dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)
    assert {key.strip(): value.strip() for key, value in config.items()}["logger_class"] == "api.gunicorn_logger.Logger"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("named", [True, False], ids=["access log named", "none named"])
def test_under_gunicorn_a_named_access_log_is_written_and_none_otherwise(tmp_path, named):
    access_log = tmp_path / "gunicorn-access.log"
    extra = {"GUNICORN_CMD_ARGS": f"--access-logfile {access_log}"} if named else {}
    env = production_env(THROTTLE_CACHE_URL="locmemcache://", LOG_LEVEL="INFO", **extra)
    log = tmp_path / "gunicorn.log"
    with gunicorn(env, log) as base:
        assert get(f"{base}/v1/tasks", headers={"X-Request-Id": "rid-g"})[0] == 401
    assert "Using worker: sync" in log.read_text()
    gunicorn_lines = [line for line in log.read_text().splitlines() if '"GET /v1/tasks HTTP/1.1" 401' in line]
    assert gunicorn_lines == []  # the log of record has Django's line only
    assert "event=access" in log.read_text() or '"event": "access"' in log.read_text()
    if named:
        lines = [line for line in access_log.read_text().splitlines() if "/v1/tasks" in line]
        assert len(lines) == 1 and '"GET /v1/tasks HTTP/1.1" 401' in lines[0], access_log.read_text()
    else:
        assert not access_log.exists()
