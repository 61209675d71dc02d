"""gunicorn's logger for the API: the access line is Django's (api.access_log), not gunicorn's.

gunicorn builds its access line's fields and a log record for every request whenever a
logging dictionary is configured (gunicorn.conf.py passes Django's), even with no access log
named, and then drops the record: that was work in every request for no line at all.
"""

from __future__ import annotations

from typing import Any

from gunicorn import glogging


class Logger(glogging.Logger):
    """gunicorn's logger, with no access line unless the operator names an access log."""

    def access(self, resp: Any, req: Any, environ: dict[str, Any], request_time: Any) -> None:
        # An access log named on the command line (--access-logfile), or syslog as gunicorn sends it
        # there, still gets gunicorn's line.
        if self.cfg.accesslog is None and not (self.cfg.syslog and not self.cfg.disable_redirect_access_to_syslog):
            return
        super().access(resp, req, environ, request_time)
