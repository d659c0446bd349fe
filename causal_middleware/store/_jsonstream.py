"""A bounded-memory JSON reader for the import formats (OTLP/JSON, JSON lines, TRAIL).

Import files are large arrays of small objects (spans) inside a few levels of fixed structure.
:class:`JsonStream` walks that outer structure itself (objects key by key, arrays element by
element) and hands every value it does not descend into to the C decoder
(``json.JSONDecoder.raw_decode``), so memory holds one span at a time (plus a read buffer), not
the file, and the bulk of the parsing still runs at C speed. It reads the text in chunks; a value
longer than the buffer grows the buffer geometrically (amortised linear time), so one huge value
costs its own size, never the file's.

Nesting is limited (:data:`MAX_DEPTH` levels): deeper input is a one-line :class:`JsonStreamError`
instead of a ``RecursionError`` from the decoder or from the code that walks the decoded value.

Why not ``ijson``: it is not a dependency of this package, and its pure-Python backend is much
slower than ``raw_decode``; what the importers need is three levels of fixed structure, which this
module walks in about a hundred lines.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from json.decoder import scanstring  # type: ignore[attr-defined]
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from causal_middleware.store.base import StoreError

if TYPE_CHECKING:
    from causal_middleware.spans.record import SpanRecord
    from causal_middleware.store.base import SpanStore

__all__ = ["MAX_DEPTH", "JsonStream", "JsonStreamError", "check_depth", "stamp", "write_batches"]

# Deepest nesting accepted anywhere in an import file, counted from the document root. Real OTLP
# and TRAIL files nest a few tens of levels; the decoders recurse once per level.
MAX_DEPTH = 200

_CHUNK = 1 << 18  # characters read at a time
_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


class JsonStreamError(ValueError):
    """Malformed or too deeply nested JSON at ``line``/``column`` (1-based)."""

    def __init__(self, msg: str, line: int, column: int, *, too_deep: bool = False) -> None:
        self.msg, self.line, self.column, self.too_deep = msg, line, column, too_deep
        super().__init__(f"{msg}: line {line} column {column}")


def _too_deep_message() -> str:
    return f"nested deeper than {MAX_DEPTH} levels (the import limit)"


def check_depth(value: Any, depth: int) -> None:
    """Raise ``ValueError`` when ``value``, itself at nesting level ``depth``, nests past :data:`MAX_DEPTH`.

    Iterative, so it cannot overflow the stack whatever the input.
    """
    stack = [(value, depth)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if level + 1 > MAX_DEPTH:
            raise ValueError(_too_deep_message())
        stack.extend((child, level + 1) for child in children if isinstance(child, dict | list))


class JsonStream:
    """Cursor over the JSON text read from ``handle`` (a text file), one token or value at a time."""

    def __init__(self, handle: TextIO, chunk: int = _CHUNK) -> None:
        self._handle = handle
        self._chunk = chunk
        self._buf = ""
        self._pos = 0
        self._eof = False
        self._dropped = 0  # characters of the text already dropped from the buffer
        self._lines = 0  # newlines in the dropped text
        self._last_newline = -1  # absolute offset of the last dropped newline

    # --- buffer ----------------------------------------------------------------------------
    def _fill(self) -> bool:
        """Read more text (at least as much as the unread part: geometric growth); False at EOF."""
        if self._eof:
            return False
        if self._pos:
            dropped = self._buf[: self._pos]
            newlines = dropped.count("\n")
            if newlines:
                self._lines += newlines
                self._last_newline = self._dropped + dropped.rfind("\n")
            self._dropped += self._pos
            self._buf = self._buf[self._pos :]
            self._pos = 0
        more = self._handle.read(max(self._chunk, len(self._buf)))
        if not more:
            self._eof = True
            return False
        self._buf += more
        return True

    @property
    def offset(self) -> int:
        """Characters consumed so far (absolute)."""
        return self._dropped + self._pos

    def location(self, pos: int | None = None) -> tuple[int, int]:
        """(line, column), 1-based, of buffer position ``pos`` (default: the cursor)."""
        pos = self._pos if pos is None else pos
        newline = self._buf.rfind("\n", 0, pos)
        line = self._lines + self._buf.count("\n", 0, pos) + 1
        if newline >= 0:
            return line, pos - newline
        return line, self._dropped + pos - self._last_newline

    def error(self, msg: str, pos: int | None = None, *, too_deep: bool = False) -> JsonStreamError:
        line, column = self.location(pos)
        return JsonStreamError(msg, line, column, too_deep=too_deep)

    # --- tokens ----------------------------------------------------------------------------
    def peek(self) -> str:
        """The next non-whitespace character, not consumed ("" at the end of the text)."""
        while True:
            self._pos = _WS.match(self._buf, self._pos).end()  # type: ignore[union-attr]
            if self._pos < len(self._buf):
                return self._buf[self._pos]
            if not self._fill():
                return ""

    def expect(self, char: str, what: str) -> None:
        if self.peek() != char:
            raise self.error(f"Expecting {what}")
        self._pos += 1

    def _key(self) -> str:
        if self.peek() != '"':
            raise self.error("Expecting property name enclosed in double quotes")
        while True:
            try:
                key, end = scanstring(self._buf, self._pos + 1, True)
            except json.JSONDecodeError as exc:
                if self._fill():
                    continue
                raise self.error(exc.msg, exc.pos) from None
            self._pos = end
            return str(key)

    def value(self) -> Any:
        """Decode the next whole value (C decoder); the text it spans may exceed the buffer."""
        self.peek()
        while True:
            start = self._pos
            try:
                value, end = _DECODER.raw_decode(self._buf, start)
            except json.JSONDecodeError as exc:
                if self._maybe_truncated(exc) and self._fill():
                    continue
                raise self.error(exc.msg, exc.pos) from None
            except RecursionError:
                raise self.error(_too_deep_message(), start, too_deep=True) from None
            if end == len(self._buf) and self._fill():
                continue  # a number at the end of the buffer may go on in the next chunk
            self._pos = end
            return value

    def _maybe_truncated(self, exc: json.JSONDecodeError) -> bool:
        # Errors a value cut off by the end of the buffer produces: an unterminated string, or
        # any error within a token's length of the buffer's end ("tru", "1.", "\\u00").
        return exc.msg.startswith("Unterminated string") or exc.pos >= len(self._buf) - 16

    def skip(self) -> None:
        """Consume the next value without keeping it (bounded by that value's own size)."""
        self.value()

    # --- structure ---------------------------------------------------------------------------
    def members(self) -> Iterator[str]:
        """Walk an object: yields each key; the caller must consume its value before resuming."""
        self.expect("{", "'{'")
        if self.peek() == "}":
            self._pos += 1
            return
        while True:
            key = self._key()
            self.expect(":", "':' delimiter")
            yield key
            char = self.peek()
            self._pos += 1
            if char == "}":
                return
            if char != ",":
                self._pos -= 1
                raise self.error("Expecting ',' delimiter")

    def elements(self) -> Iterator[int]:
        """Walk an array: yields each element's index; the caller consumes the element."""
        self.expect("[", "'['")
        if self.peek() == "]":
            self._pos += 1
            return
        index = 0
        while True:
            yield index
            index += 1
            char = self.peek()
            self._pos += 1
            if char == "]":
                return
            if char != ",":
                self._pos -= 1
                raise self.error("Expecting ',' delimiter")


# --- streamed imports ---------------------------------------------------------------------------
def stamp(file: Path) -> tuple[int, int]:
    """(size, mtime) of ``file``: a streamed import reads it twice and checks it did not change."""
    info = file.stat()
    return info.st_size, info.st_mtime_ns


def write_batches(
    store: SpanStore,
    name: str,
    records: Iterable[SpanRecord],
    offset: Callable[[], int],
    *,
    before: tuple[int, int],
    batch_spans: int,
    batch_chars: int,
) -> int:
    """Write ``records`` (the second pass over an already validated file) in batches of at most
    ``batch_spans`` spans or ``batch_chars`` characters of the file; returns the spans written.

    A failure part-way (the store full or locked, the file changed since it was validated) is a
    ``StoreError`` that says how much was written; spans are keyed by trace and span id, so
    importing the same file again completes it without duplicates.
    """
    file = Path(name)
    written = 0
    batch: list[SpanRecord] = []
    start = 0

    def flush() -> None:
        nonlocal written, batch, start
        if batch:
            store.write_spans(batch)
            written += len(batch)
        batch, start = [], offset()

    try:
        if stamp(file) != before:
            raise StoreError(f"{name} changed while it was being imported; import it again")
        for record in records:
            batch.append(record)
            if len(batch) >= batch_spans or offset() - start >= batch_chars:
                flush()
        flush()
        if stamp(file) != before:
            raise StoreError(f"{name} changed while it was being imported; import it again")
    except (StoreError, OSError) as exc:
        if written == 0:
            raise
        raise StoreError(
            f"importing {name} stopped after {written} spans were written: {exc}; importing the file "
            "again completes it (spans already written are replaced, not duplicated)"
        ) from exc
    return written
