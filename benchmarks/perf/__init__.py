"""Performance benchmarks (issue 16): ``python -m benchmarks.perf --out DIR`` writes ``DIR/perf.json``."""
