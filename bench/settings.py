"""Settings for the benchmarks: the test settings (test-only secrets, DEBUG off) plus the bench app."""

from tests.settings import *  # noqa: F403 - the bench runs the real settings plus its own commands
from tests.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "bench"]
