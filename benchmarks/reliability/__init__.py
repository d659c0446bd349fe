"""Reliability figures (issue 13): ``python -m benchmarks.reliability --out DIR``."""
