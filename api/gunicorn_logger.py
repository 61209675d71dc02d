"""gunicorn's logger for the API: the access line is Django's (api.access_log), not gunicorn's.

gunicorn builds its access line's fields and a log record for every request whenever a
logging dictionary is configured (gunicorn.conf.py passes Django's), even when its access
logger has nowhere to write, and then drops the record: work in every request for no line.
"""

from __future__ import annotations

import logging
from typing import Any

from gunicorn import glogging


class Logger(glogging.Logger):
    """gunicorn's logger, building its access line only when the line would be written somewhere.

    An access log named (`--access-logfile`), syslog, or a `gunicorn.access` logger configured
    with a handler all give it one. gunicorn switches to its statsd logger by itself only while
    the logger class is its default: with this one, `--statsd-host` needs
    `--logger-class gunicorn.instrument.statsd.Statsd` too (the API's metrics are Prometheus's).
    """

    def access(self, resp: Any, req: Any, environ: dict[str, Any], request_time: Any) -> None:
        if not (self.access_log.isEnabledFor(logging.INFO) and self.access_log.hasHandlers()):
            return
        super().access(resp, req, environ, request_time)
