"""Benchmarks on traces the project did not record (Who&When)."""
