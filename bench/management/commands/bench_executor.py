"""`manage.py bench_executor` (with DJANGO_SETTINGS_MODULE=bench.settings): see bench.executor."""

from bench.executor import Command

__all__ = ["Command"]
