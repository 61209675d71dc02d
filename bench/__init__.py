"""Benchmarks, outside the production apps: `make bench-scheduler`, `make bench-executor`, `make bench-history`.

A Django app installed only by `bench.settings` (the test settings plus this
app), so `manage.py bench_scheduler` and `bench_executor` exist only when a
bench runs; others run as modules (`python -m bench.history`). The benches drive
the real loops and call `jobs.queue`; the only SQL of their own sets up fixtures,
watches progress and times the rejected single-ORDER-BY claim as a baseline.
"""
