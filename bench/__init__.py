"""Benchmarks: real processes measured from outside, never imported by the apps."""
