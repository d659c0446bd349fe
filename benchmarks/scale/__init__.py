"""``python -m benchmarks.scale --out DIR [--quick] [--postgres URL]``: past one machine.

Writes ``DIR/scale.json`` (keys documented in :mod:`benchmarks.scale.__main__`): Postgres ingest
from 1, 2 and 4 writer processes against SQLite's single writer, ``list_runs`` /
``get_trajectory`` p50 at the largest run count of the mode, and repair-queue throughput with 1
and 2 ``causal-mw worker`` processes.
"""
