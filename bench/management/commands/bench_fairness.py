"""`manage.py bench_fairness` (with DJANGO_SETTINGS_MODULE=bench.settings): see bench.fairness."""

from bench.fairness import Command

__all__ = ["Command"]
