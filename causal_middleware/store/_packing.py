"""How the SQLite store packs span columns (schema version 2): large values stored once,
content-addressed, small JSON compressed against a dictionary of the span contract's names.

* A string attribute of :data:`BLOB_MIN_CHARS` or more (documents, prompts, node inputs and
  outputs) is replaced in the attributes JSON by ``{"\\u0000blob": digest}`` and kept once in the
  ``blobs`` table, whatever the span, run or key it came from; the resource is kept there too
  (the column holds ``@digest``), so each distinct resource is written once.
* The attributes and events JSON, when longer than :data:`PACK_MIN_BYTES`, are stored as
  ``b"\\x01"`` + raw deflate against :data:`_DICTIONARY` (attribute names and the contract's
  values: most of a small span's bytes); shorter ones stay JSON text.
* A blob is ``b"\\x00"`` + UTF-8, or ``b"\\x02"`` + zlib when that is smaller.

Rows written by schema version 1 (plain JSON text) decode unchanged, so both layouts coexist in
one file. The dictionary is part of the format: never change ``_DICTIONARY``; a new one needs a
new tag byte.
"""

from __future__ import annotations

import hashlib
import json
import re
import zlib
from collections.abc import Callable, Container, Iterable, Mapping
from typing import Any

from causal_middleware.spans import attributes as A
from causal_middleware.spans._json import decode, loads_utf8
from causal_middleware.spans.record import SpanRecord
from causal_middleware.store.base import StoreError

BLOB_MIN_CHARS = 256
# Deflating is most of the write path's CPU: JSON under 1 kB (most spans once long strings are
# blobs) stays text. Measured on reference-agent runs: 883 B/span and ~1.5x the ingest rate, against
# 673 B/span when everything over 300 B was deflated (the bound is 1,000 B/span).
PACK_MIN_BYTES = 1024
BLOB_KEY = "\u0000blob"
RESOURCE_PREFIX = "@"
_DEFLATED, _RAW, _ZLIB = b"\x01", b"\x00", b"\x02"

_NAMES = sorted(v for k, v in vars(A).items() if k.isupper() and isinstance(v, str))
_DICTIONARY = (
    '{"'
    + '":"","'.join(_NAMES)
    + '":""} "CHAIN" "AGENT" "LLM" "RETRIEVER" "TOOL" "DECISION" "node" "llm" "retrieval" "tool" '
    '"decision" "answer" "hop" "run" "invoke_agent" "chat" "execute_tool" "application/json" '
    '"text/plain" "[\\"__pregel_pull\\", \\"branch:to:" {"' + BLOB_KEY + '":"'
).encode()


# Attribute names of the span contract are stored as short codes: "§" + base-36 position in the
# sorted registry ("§" + code + ".3" for a templated name's indices); a stored key that
# really starts with "§" gets a second one. Part of the format: codes only ever get added.
CODE_MARK = "\u00a7"
# frozen: a new attribute name is appended at the end of its tuple, never inserted or removed
_EXACT_NAMES = (
    "causal.answer.text",
    "causal.checkpoint.id",
    "causal.checkpoint.ns",
    "causal.content.truncated",
    "causal.decision.choice",
    "causal.decision.options",
    "causal.diagnosis.method",
    "causal.event.kind",
    "causal.hop.index",
    "causal.hop.sub_query",
    "causal.langgraph.path",
    "causal.langgraph.step",
    "causal.langgraph.triggers",
    "causal.lineage.fork_checkpoint_id",
    "causal.lineage.fork_hop",
    "causal.lineage.fork_node",
    "causal.lineage.fork_step",
    "causal.lineage.intervention",
    "causal.lineage.mode",
    "causal.lineage.parent_run_id",
    "causal.node",
    "causal.node.frozen",
    "causal.node.input.refs",
    "causal.node.side_effecting",
    "causal.repair.crs",
    "causal.repair.explanation",
    "causal.repair.fork_run_id",
    "causal.repair.llm_calls",
    "causal.repair.minimality",
    "causal.repair.naive_reexecutions",
    "causal.repair.reexecutions",
    "causal.repair.run_id",
    "causal.repair.status",
    "causal.repair.step_id",
    "causal.repair.validated",
    "causal.retriever.name",
    "causal.run.counterfactual",
    "causal.run.graph",
    "causal.run.labels",
    "causal.run.outcome",
    "causal.run.reference",
    "causal.span.type",
    "causal.tool.side_effecting",
    "gen_ai.conversation.id",
    "gen_ai.evaluation.explanation",
    "gen_ai.evaluation.name",
    "gen_ai.evaluation.score.label",
    "gen_ai.evaluation.score.value",
    "gen_ai.operation.name",
    "gen_ai.provider.name",
    "gen_ai.request.model",
    "gen_ai.request.seed",
    "gen_ai.request.temperature",
    "gen_ai.retrieval.query.text",
    "gen_ai.tool.call.id",
    "gen_ai.tool.name",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "input.mime_type",
    "input.value",
    "llm.invocation_parameters",
    "llm.model_name",
    "llm.provider",
    "llm.token_count.completion",
    "llm.token_count.prompt",
    "llm.token_count.total",
    "metadata",
    "openinference.span.kind",
    "output.mime_type",
    "output.value",
    "session.id",
    "tool.id",
    "tool.name",
    "tool.parameters",
)
_TEMPLATE_NAMES = (
    "llm.input_messages.N.message.content",
    "llm.input_messages.N.message.role",
    "llm.output_messages.N.message.content",
    "llm.output_messages.N.message.role",
    "llm.output_messages.N.message.tool_calls.M.tool_call.function.arguments",
    "llm.output_messages.N.message.tool_calls.M.tool_call.function.name",
    "llm.output_messages.N.message.tool_calls.M.tool_call.id",
    "retrieval.documents.N.document.content",
    "retrieval.documents.N.document.id",
    "retrieval.documents.N.document.metadata",
    "retrieval.documents.N.document.score",
)
_EXACT, _TEMPLATES = list(_EXACT_NAMES), list(_TEMPLATE_NAMES)


def _base36(i: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        i, r = divmod(i, 36)
        out = digits[r] + out
        if not i:
            return out


_CODE_OF = {name: CODE_MARK + _base36(i) for i, name in enumerate(_EXACT)}
_TEMPLATE_CODE = {name: "t" + _base36(i) for i, name in enumerate(_TEMPLATES)}
_NAME_OF = {code[1:]: name for name, code in _CODE_OF.items()}
_TEMPLATE_OF = {code: name for name, code in _TEMPLATE_CODE.items()}
_TEMPLATE_RE = re.compile(
    "^(?:"
    + "|".join(
        "(?P<"
        + _TEMPLATE_CODE[n]
        + ">"
        + r"\.".join(r"\d+" if p in ("N", "M") else re.escape(p) for p in n.split("."))
        + ")"
        for n in _TEMPLATES
    )
    + ")$"
)
_encoded_keys: dict[str, str] = {}
_codes_of: dict[tuple[str, ...], tuple[str, ...]] = {}  # a span's attribute names -> their codes
_names_of: dict[tuple[str, ...], tuple[str, ...]] = {}  # a stored key set -> its attribute names
_decoded_keys: dict[str, str] = {}
_KEY_SETS = 4096  # distinct key sets remembered (spans of one kind share theirs)


def _each_key(
    memo: dict[tuple[str, ...], tuple[str, ...]], keys: tuple[str, ...], convert: Callable[[str], str]
) -> tuple[str, ...]:
    """``convert`` applied to each of ``keys``, remembered per key set (bounded)."""
    out = memo.get(keys)
    if out is None:
        out = tuple(convert(key) for key in keys)
        if len(memo) < _KEY_SETS:
            memo[keys] = out
    return out


def decoded_names(keys: tuple[str, ...]) -> tuple[str, ...]:
    """The attribute names of a stored key set (:func:`decode_key` of each, remembered)."""
    return _each_key(_names_of, keys, decode_key)


def encode_key(key: str) -> str:
    hit = _encoded_keys.get(key)
    if hit is not None:
        return hit
    code = _CODE_OF.get(key)
    if code is None:
        match = _TEMPLATE_RE.match(key)
        if match is not None and match.lastgroup is not None:
            indices = [p for p in key.split(".") if p.isdigit()]
            code = CODE_MARK + match.lastgroup + "." + ".".join(indices)
        elif key.startswith(CODE_MARK):
            code = CODE_MARK + key
        else:
            code = key
    if len(_encoded_keys) < 100_000:
        _encoded_keys[key] = code
    return code


def decode_key(key: str) -> str:
    if not key.startswith(CODE_MARK):
        return key
    hit = _decoded_keys.get(key)
    if hit is not None:
        return hit
    rest = key[1:]
    if rest.startswith(CODE_MARK):
        name = rest
    elif rest in _NAME_OF:
        name = _NAME_OF[rest]
    else:
        code, _, tail = rest.partition(".")
        template = _TEMPLATE_OF.get(code)
        if template is None:
            return key
        indices = iter(tail.split("."))
        name = ".".join(next(indices, "0") if p in ("N", "M") else p for p in template.split("."))
    if len(_decoded_keys) < 100_000:
        _decoded_keys[key] = name
    return name


def blob_digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=12).hexdigest()


# a 4 kB window holds the dictionary; copying a primed compressor skips hashing it for every row
_WBITS, _MEM_LEVEL = -12, 5
_PRIMED = zlib.compressobj(1, zlib.DEFLATED, _WBITS, _MEM_LEVEL, zlib.Z_DEFAULT_STRATEGY, _DICTIONARY)


def _deflate(data: bytes) -> bytes:
    packer = _PRIMED.copy()
    return _DEFLATED + packer.compress(data) + packer.flush()


def _inflate(data: bytes) -> bytes:
    unpacker = zlib.decompressobj(_WBITS, zdict=_DICTIONARY)
    return unpacker.decompress(data[1:]) + unpacker.flush()


_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def compact_json(value: Any, column: str, span: SpanRecord) -> str:
    """``_common.dumps`` (compact JSON, or a StoreError naming the span's ``column``) with one
    encoder built once instead of one per call: the write path encodes every span's columns."""
    try:
        return _COMPACT.encode(value)
    except (TypeError, ValueError) as exc:
        where = f"{column} of span {span.span_id} of trace {span.trace_id}"
        raise StoreError(f"{where} is not JSON-serialisable: {exc}") from exc


def pack_json(text: str) -> str | bytes:
    """A JSON column: as text when short, else deflated against the dictionary."""
    data = text.encode()
    if len(data) < PACK_MIN_BYTES:
        return text
    return _deflate(data)


def unpack_json(value: str | bytes) -> Any:
    if isinstance(value, bytes):
        raw = _inflate(value) if value[:1] == _DEFLATED else value
        return loads_utf8(raw)
    return decode(value)


def unpack_attributes(value: str | bytes) -> tuple[Any, bool]:
    """``unpack_json(value)``, and whether the text may hold a blob reference. A reference's key
    holds a NUL character, which JSON can only write as the ``\\u0000`` escape: a text without one
    holds no reference (a text with one may, or may only hold that escape elsewhere)."""
    if isinstance(value, bytes):
        raw = _inflate(value) if value[:1] == _DEFLATED else value
        return loads_utf8(raw), b"\\u0000" in raw
    return decode(value), "\\u0000" in value


def blob_value(text: str) -> bytes:
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) >= 512:
        packed = zlib.compress(raw, 1)
        if len(packed) + 1 < len(raw):
            return _ZLIB + packed
    return _RAW + raw


def blob_text(value: bytes) -> str:
    body = zlib.decompress(value[1:]) if value[:1] == _ZLIB else value[1:]
    return body.decode("utf-8", "surrogatepass")


def lift_blobs(
    attributes: Mapping[str, Any],
    blobs: dict[str, bytes],
    known: Container[str] = (),
    *,
    min_chars: int = BLOB_MIN_CHARS,
) -> dict[str, Any]:
    """``attributes`` with each string of ``min_chars`` or more replaced by its blob reference;
    the blobs not in ``known`` (already stored) are added to ``blobs``."""
    # one call per span the store writes: the spans of one kind share their names (in order), so
    # the coded names come from one lookup, and only the rare long strings are looked at one by one
    codes = _each_key(_codes_of, tuple(attributes), encode_key)
    values = list(attributes.values())
    long_at = [i for i, v in enumerate(values) if isinstance(v, str) and len(v) >= min_chars]
    for i in long_at:
        value = values[i]
        digest = hashlib.blake2b(value.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()
        if digest not in known and digest not in blobs:
            blobs[digest] = blob_value(value)
        values[i] = {BLOB_KEY: digest}
    return dict(zip(codes, values, strict=True))


def blob_refs(attributes: Mapping[str, Any]) -> Iterable[str]:
    for value in attributes.values():
        if isinstance(value, dict) and len(value) == 1 and isinstance(value.get(BLOB_KEY), str):
            yield value[BLOB_KEY]


def restore_blobs(attributes: dict[str, Any], texts: Mapping[str, str]) -> dict[str, Any]:
    """``attributes`` with names decoded and blob references replaced by their text (a missing
    blob stays a reference)."""
    out: dict[str, Any] = {}
    for key, value in attributes.items():
        if isinstance(value, dict) and len(value) == 1 and value.get(BLOB_KEY) in texts:
            value = texts[value[BLOB_KEY]]
        out[decode_key(key)] = value
    return out
