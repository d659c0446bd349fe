"""Benchmarks that run outside the installed library (``python -m benchmarks.agents``)."""
