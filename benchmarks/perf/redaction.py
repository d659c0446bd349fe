"""The OTLP content policy's cost per run: ``ContentPolicy.filter_span`` (redaction included) over
the spans of a recorded 3-hop and 30-hop run, this checkout's against git ``HEAD``'s
(``before``, when the checkout has one), interleaved, medians; ``same_output`` says whether both
produced identical spans."""

from __future__ import annotations

import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from causal_middleware.integrations.langgraph.instrument import SPAN_LIMITS, _resource, instrument
from langgraph.checkpoint.memory import InMemorySaver
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from causal_middleware.spans.content import ContentPolicy

from .graphs import build_chain_graph, chain_input


def head_module(
    path: str, name: str, ref: str = "HEAD", *, companions: tuple[str, ...] = ()
) -> ModuleType | None:
    """``path`` as git ``ref`` has it, loaded as module ``name``; None outside a git checkout.

    ``companions``: modules (dotted names, e.g. ``causal_middleware.store._common``) that ``path``
    imports and that must come from ``ref`` too (the store's cache and stitching helpers change
    with it): each is loaded from ``ref`` under a private name and ``path``'s source (and later
    companions') import it from there."""
    root = Path(__file__).resolve().parents[2]

    def source_at(file: str) -> str | None:
        try:
            return subprocess.run(
                ["git", "show", f"{ref}:{file}"], cwd=root, capture_output=True, text=True, check=True
            ).stdout
        except (OSError, subprocess.CalledProcessError):
            return None

    folder = Path(tempfile.mkdtemp(prefix="perf-head-"))
    renamed: dict[str, str] = {}

    def load(source: str, module_name: str) -> ModuleType:
        for original, private in renamed.items():
            source = source.replace(f"from {original} import", f"from {private} import")
        file = folder / (module_name.rsplit(".", 1)[-1] + ".py")
        file.write_text(source)
        spec = importlib.util.spec_from_file_location(module_name, file)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
        return module

    for companion in companions:
        companion_source = source_at(companion.replace(".", "/") + ".py")
        if companion_source is None:
            return None
        private = f"{name}__{companion.rsplit('.', 1)[-1]}"
        load(companion_source, private)
        renamed[companion] = private
    source = source_at(path)
    return None if source is None else load(source, name)


# what the SQLite store of another revision must bring along (its trajectory builder, its cache,
# row packing and record helpers), so a change to any of them is measured against the old one
STORE_COMPANIONS = (
    "causal_middleware.spans.builder",
    "causal_middleware.store._common",
    "causal_middleware.store._packing",
    "causal_middleware.store._records",
)


def recorded_spans(hops: int) -> list[Any]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=_resource(), span_limits=SPAN_LIMITS)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    graph = instrument(
        build_chain_graph(hops, checkpointer=InMemorySaver()), store=None, tracer_provider=provider
    )
    graph.invoke(chain_input(hops), {"configurable": {"thread_id": "redaction"}})
    graph.shutdown()
    return list(exporter.get_finished_spans())


def _plain(span: Any) -> tuple[Any, ...]:
    return (
        dict(span.attributes or {}),
        [dict(e.attributes or {}) for e in span.events],
        span.status.description,
    )


def run(*, quick: bool = False, before_ref: str = "HEAD") -> dict[str, Any]:
    head = head_module(
        "causal_middleware/spans/content.py", "causal_middleware.spans._content_head", before_ref
    )
    policies: dict[str, Any] = {"after": ContentPolicy()}
    if head is not None:
        policies["before"] = head.ContentPolicy()
    rounds = 15 if quick else 60
    out: dict[str, Any] = {"before_ref": before_ref if head is not None else None}
    for hops in (3, 30):
        spans = recorded_spans(hops)
        times: dict[str, list[float]] = {name: [] for name in policies}
        outputs = {name: [_plain(p.filter_span(s)) for s in spans] for name, p in policies.items()}
        for _ in range(rounds):
            for name, policy in policies.items():
                start = time.perf_counter()
                for span in spans:
                    policy.filter_span(span)
                times[name].append(time.perf_counter() - start)
        figures: dict[str, Any] = {"spans": len(spans)}
        for name in policies:
            figures[f"{name}_ms_per_run"] = round(statistics.median(times[name]) * 1e3, 3)
        if "before" in policies:
            figures["speedup"] = round(figures["before_ms_per_run"] / figures["after_ms_per_run"], 1)
            figures["same_output"] = outputs["before"] == outputs["after"]
        out[f"hops_{hops}"] = figures
    return out
