"""``bench agents``: a zoo of small LangGraph agents of different shapes, with failures of known
cause planted in their *world* (corpus, tool table, entity linker, passage phrasing), diagnosed
and repaired with no agent adapter. Run ``python -m benchmarks.agents --out DIR``; see
:mod:`benchmarks.agents.report` for the keys of ``DIR/agents.json``."""
