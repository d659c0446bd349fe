"""Evaluation statistics shared by the benchmarks and the context bench: bootstrap intervals, McNemar."""
