"""What Django's error reports (the DEBUG page, error mails) hide: its defaults, and connection URLs.

Django's SafeExceptionReporterFilter masks settings and request META entries
whose names look secret (KEY, TOKEN, PASS, ...), but `DATABASE_URL`,
`THROTTLE_CACHE_URL` or a `*_DSN` carry their password inside the value, and
runserver copies the process environment into every request's META. Any name
with URL or DSN in it is masked whole: a debug page loses little by not showing
STATIC_URL, and a password in a URL is never printed.
"""

from __future__ import annotations

import re

from django.views.debug import SafeExceptionReporterFilter

# user:password@ in any URL, wherever it stands (a cache's LOCATION holds THROTTLE_CACHE_URL whole).
_CREDENTIALS_IN_URL = re.compile(r"(?<=://)[^/@\s]*@")


class ConnectionUrlHidingFilter(SafeExceptionReporterFilter):
    """Django's filter, also hiding settings and META entries named like a URL or a DSN, and credentials in URLs."""

    hidden_settings = re.compile(SafeExceptionReporterFilter.hidden_settings.pattern + "|URL|DSN", flags=re.IGNORECASE)

    def cleanse_setting(self, key, value):
        cleansed = super().cleanse_setting(key, value)
        if isinstance(cleansed, str):
            return _CREDENTIALS_IN_URL.sub(f"{self.cleansed_substitute}@", cleansed)
        return cleansed
