"""`manage.py bench_scheduler` (with DJANGO_SETTINGS_MODULE=bench.settings): see bench.scheduler."""

from bench.scheduler import Command

__all__ = ["Command"]
