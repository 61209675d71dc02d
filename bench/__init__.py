"""Benchmarks: run as modules (`python -m bench.history`), never imported by the apps."""
