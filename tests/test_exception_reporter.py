"""Django's error page with DEBUG on never shows a connection URL's password (settings or request META)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import path

# Built, not written whole: the page shows this module's source lines around the failing view.
PASSWORD = "-".join(("hunter2", "db", "password"))
DATABASE_URL = f"mysql://jobsched:{PASSWORD}@db.internal:3306/jobsched"


def fail(request):
    raise RuntimeError("boom")


urlpatterns = [path("fail/", fail)]


@pytest.fixture
def debug_page(settings):
    settings.DEBUG = True
    settings.ROOT_URLCONF = __name__
    settings.DATABASE_URL = DATABASE_URL
    settings.THROTTLE_CACHE_URL = f"redis://:{PASSWORD}@cache.internal:6379/0"
    settings.SENTRY_DSN = f"https://{PASSWORD}@sentry.internal/1"
    # Where the URLs really end up: django-environ copies each into a nested setting's LOCATION/PASSWORD.
    settings.CACHES = {
        **settings.CACHES,
        "shared": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": f"redis://:{PASSWORD}@cache.internal:6379/0",
        },
    }
    settings.LOGGING_EXTRA = [f"amqp://user:{PASSWORD}@mq.internal/"]


@pytest.mark.parametrize("accept", ["text/html", "text/plain"])
def test_the_debug_error_page_hides_connection_urls_and_their_passwords(debug_page, accept):
    # runserver puts the process environment in every request's META: DATABASE_URL is there too.
    response = Client(raise_request_exception=False).get("/fail/", HTTP_ACCEPT=accept, DATABASE_URL=DATABASE_URL)

    page = response.content.decode()
    assert response.status_code == 500
    assert "RuntimeError" in page and "DATABASE_URL" in page  # the debug page, listing the setting's name
    assert PASSWORD not in page
