"""Secret corpus leaks: over OTLP export, in ``causal-mw runs export`` files and in LLM prompts,
and the redactor's false-positive rate on ordinary text (issue 13, item 6).

``run()`` returns the figures (target: every leak count 0; false-positive rate near 0).
"""

from __future__ import annotations

import json
import tempfile
import time
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from benchmarks.reliability.safety_corpus import (
    CLEAN_TEXT,
    ISSUE_SHAPES,
    SECRETS,
    RecordingChatModel,
    leaks,
    run_every_llm_role,
    scripted_reply,
)
from causal_middleware.spans import attributes as A
from causal_middleware.spans.content import ContentFilterExporter, default_redactor
from causal_middleware.spans.record import SpanRecord


def _emit(provider: TracerProvider) -> None:
    """A root span and one child per secret, the secret in every place a span carries text:
    input and output values (plain and JSON-encoded), a document's content, an event attribute
    and the status description."""
    tracer = provider.get_tracer("bench.reliability.secrets")
    with tracer.start_as_current_span("LangGraph", attributes={A.OPENINFERENCE_SPAN_KIND: "CHAIN"}):
        for name, text, _ in SECRETS:
            with tracer.start_as_current_span(
                f"node-{name}",
                attributes={
                    A.OPENINFERENCE_SPAN_KIND: "CHAIN",
                    A.INPUT_VALUE: f"call with {text} please",
                    A.OUTPUT_VALUE: json.dumps({"messages": [{"content": f"line one\n{text}\nline three"}]}),
                    A.indexed(A.RETRIEVAL_DOCUMENTS_DOCUMENT_CONTENT, 0): f"doc: {text}",
                },
            ) as span:
                span.add_event("log", {"message": f"got {text}"})
                span.set_status(Status(StatusCode.ERROR, f"failed: {text}"))


def _spans_text(spans: Any) -> str:
    parts = []
    for s in spans:
        parts.append(json.dumps(dict(s.attributes or {}), default=str))
        parts.extend(json.dumps(dict(e.attributes or {}), default=str) for e in s.events)
        parts.append(s.status.description or "")
    return "\n".join(parts)


def _per_shape(text: str) -> dict[str, int]:
    found = set(leaks(text))
    return {name: int(name in found) for name, _, _ in SECRETS}


def otlp_leaks() -> tuple[dict[str, int], list[SpanRecord]]:
    """Secrets in spans as the OTLP path sends them (:class:`ContentFilterExporter`, default
    policy), per shape; also the unfiltered spans (for the export figure)."""
    filtered, raw = InMemorySpanExporter(), InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ContentFilterExporter(filtered)))
    provider.add_span_processor(SimpleSpanProcessor(raw))
    _emit(provider)
    provider.shutdown()
    records = [SpanRecord.from_readable(s) for s in raw.get_finished_spans()]
    return _per_shape(_spans_text(filtered.get_finished_spans())), records


def export_leaks(records: list[SpanRecord]) -> dict[str, Any]:
    """Secrets in ``causal-mw runs export`` files, redacted (default) and with ``--no-redact``."""
    from causal_middleware.cli.main import main
    from causal_middleware.store.sqlite import SqliteSpanStore

    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "store.db")
        with SqliteSpanStore(db) as store:
            store.write_spans(records)
            if hasattr(store, "flush"):
                store.flush()
        out: dict[str, Any] = {}
        for label, extra in (("redacted", []), ("no_redact", ["--no-redact"])):
            target = Path(tmp) / f"{label}.json"
            with redirect_stdout(StringIO()):
                code = main(["runs", "export", "--out", str(target), *extra, "--store", db])
            text = target.read_text(encoding="utf-8") if target.exists() else ""
            json.loads(text or "{}")  # the redacted file is still valid OTLP/JSON
            out[label] = {"exit_code": code, "leaks": sum(_per_shape(text).values())}
    return out


def prompt_leaks() -> dict[str, Any]:
    """Secrets in the prompts every LLM role sends (a recording chat model)."""
    model = RecordingChatModel(responder=scripted_reply)
    run_every_llm_role(model)
    text = "\n".join(model.texts())
    return {"prompts": len(model.prompts), "by_shape": _per_shape(text)}


def false_positives() -> dict[str, Any]:
    changed_plain = [t for t in CLEAN_TEXT if default_redactor(t) != t]
    changed_json = [t for t in CLEAN_TEXT if default_redactor(json.dumps(t)) != json.dumps(t)]
    return {
        "texts": len(CLEAN_TEXT),
        "changed": len(changed_plain),
        "changed_as_json": len(changed_json),
        "rate": round(len(changed_plain) / len(CLEAN_TEXT), 4),
        "examples": changed_plain[:5],
    }


def throughput() -> dict[str, float]:
    """Redactor speed on ordinary text (MB/s) and on text full of secrets."""
    clean = "\n".join(CLEAN_TEXT) * 50
    dirty = "\n".join(text for _, text, _ in SECRETS) * 20
    out = {}
    for label, text in (("clean_mb_per_s", clean), ("secrets_mb_per_s", dirty)):
        start = time.perf_counter()
        for _ in range(5):
            default_redactor(text)
        elapsed = (time.perf_counter() - start) / 5
        out[label] = round(len(text) / 1e6 / elapsed, 2)
    return out


def run() -> dict[str, Any]:
    otlp, records = otlp_leaks()
    exports = export_leaks(records)
    prompts = prompt_leaks()
    return {
        "secret_shapes": len(SECRETS),
        "issue_shapes": len(ISSUE_SHAPES),
        "redactor_leaks": sum(_per_shape(default_redactor("\n".join(t for _, t, _ in SECRETS))).values()),
        "otlp_leaks": sum(otlp.values()),
        "otlp_leaked_shapes": [k for k, v in otlp.items() if v],
        "export_leaks": exports["redacted"]["leaks"],
        "export_leaks_no_redact": exports["no_redact"]["leaks"],
        "prompt_leaks": sum(prompts["by_shape"].values()),
        "prompts_checked": prompts["prompts"],
        "false_positives": false_positives(),
        "throughput": throughput(),
    }


if __name__ == "__main__":  # pragma: no cover
    print(json.dumps(run(), indent=2))
