"""Settings for the test suite: production settings with test-only secrets.

Real commands started by end-to-end tests use this module too, so they see the
same database and keys as the test process.
"""

import os

os.environ.setdefault("SECRET_KEY", "test-only-secret-key-" + "x" * 40)
os.environ.setdefault("JWT_VERIFYING_KEY", "test-only-jwt-secret-at-least-32-bytes-long")
os.environ.setdefault("SECURE_SSL_REDIRECT", "0")
# Per test process: the autouse fixture empties it between tests without a database.
# tests/test_throttle_shared.py runs the real database cache across processes.
os.environ.setdefault("THROTTLE_CACHE_URL", "locmemcache://")
# base64 of "test-only-fernet-key-32-bytes!!!"; tests that rotate keys override the setting.
os.environ.setdefault("SECRETS_ENCRYPTION_KEYS", "dGVzdC1vbmx5LWZlcm5ldC1rZXktMzItYnl0ZXMhISE=")

from jobsched_project.settings import *  # noqa: F403 - the test settings are the real ones plus the above

# Templates name static files without a collectstatic run (tests/test_static_files.py runs
# collectstatic and the production storage).
STATIC_ROOT = None  # nothing collected: WhiteNoise would warn about a missing directory
WHITENOISE_USE_FINDERS = True
STORAGES = {
    **STORAGES,  # noqa: F405 - defined by the star import of the real settings above
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
