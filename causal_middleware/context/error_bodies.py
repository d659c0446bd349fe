"""The body of a tool error, whatever its format: JSON, a Python literal, XML or key=value pairs,
read into fields; and its human-readable text."""

from __future__ import annotations

import ast
import html
import json
import re
from typing import Any

# A single identifier-like token ("desk_id", "BOARD_ROOM", "v1.2").
_IDENTIFIER = re.compile(r"[\w][\w./-]*")


# An XML element holding text only: <name attr="...">text</name>, namespace prefix aside.
_XML_LEAF = re.compile(
    r"<(?:[\w.-]+:)?(?P<tag>[\w.-]+)(?:\s[^<>]*)?>(?P<text>[^<>]*)</(?:[\w.-]+:)?(?P=tag)\s*>"
)


_XML_START = re.compile(r"<(?:[\w.-]+:)?[\w.-]+(?P<attrs>(?:\s+[\w.:-]+\s*=\s*\"[^\"]*\")+)\s*/?>")
_XML_ATTRIBUTE = re.compile(r"(?P<prefix>[\w.-]+:)?(?P<name>[\w.-]+)\s*=\s*\"(?P<value>[^\"]*)\"")


def _xml_fields(text: str) -> dict[str, Any] | None:
    """An XML error body (a SOAP fault, an XML API's error) as ``{element name: text}``, so it is
    read by field like JSON; repeated names become lists."""
    if not text.startswith("<"):
        return None
    fields: dict[str, Any] = {}
    for m in _XML_LEAF.finditer(text):
        value = m.group("text").strip()
        if not value:
            continue
        value = value.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&apos;", "'")
        value = value.replace("&amp;", "&")
        tag = m.group("tag")
        if tag in fields:
            prior = fields[tag]
            fields[tag] = [*prior, value] if isinstance(prior, list) else [prior, value]
        else:
            fields[tag] = value
    # attributes carry fields too (<error field="size" value="XL"/>); namespace declarations do not
    for start in _XML_START.finditer(text):
        for a in _XML_ATTRIBUTE.finditer(start.group("attrs")):
            if a.group("prefix") != "xmlns:" and a.group("name") != "xmlns" and a.group("name") not in fields:
                fields[a.group("name")] = html.unescape(a.group("value"))
    return fields or None


# key=value pairs of a log line or a form-encoded error ("level=error field=x msg=\"unknown field\"").
_KEY_VALUE = re.compile(
    r"(?<![\w.-])(?P<key>[A-Za-z_][\w.-]*)=(?:\"(?P<quoted>[^\"]*)\"|(?P<bare>[^\s&,;\"]+))"
)


def _key_values(text: str) -> dict[str, Any] | None:
    """A key=value error body (logfmt, a query string) as a dict, when it holds two or more pairs
    and nothing else but them."""
    found = list(_KEY_VALUE.finditer(text))
    if len(found) < 2 or _KEY_VALUE.sub("", text).strip(" \t\n&,;") != "":
        return None
    out: dict[str, Any] = {}
    for m in found:
        value = m.group("quoted") if m.group("quoted") is not None else m.group("bare")
        items = [v.strip() for v in re.split(r"[,|]", value)]
        # a run of names ("a,b,c", "a|b|c") is a list
        out[m.group("key")] = (
            items if len(items) > 1 and all(_IDENTIFIER.fullmatch(v) for v in items) else value
        )
    return out


def structured(output: str) -> Any:
    """The JSON body of a tool error, when it has one (whole output, or after a short prefix); a
    Python literal (``{'field': 'x'}``, what a tool that prints a dict returns) and an XML body
    are read alike."""
    text = (output or "").strip()
    xml = _xml_fields(text)
    if xml is not None:
        return xml
    pairs = _key_values(text)
    if pairs is not None:
        return pairs
    for start in (0, *(i for i in (text.find("{"), text.find("[")) if i > 0)):
        try:
            return json.loads(text[start:])
        except (ValueError, TypeError):
            pass
        if text[start : start + 1] in ("{", "["):
            try:
                return ast.literal_eval(text[start:])
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
    return None


def walk(data: Any, key: str = "") -> list[tuple[str, Any]]:
    """Every ``(key, value)`` leaf or list of a parsed error body, depth first."""
    if isinstance(data, dict):
        return [pair for k, v in data.items() for pair in walk(v, str(k))]
    if isinstance(data, list) and data and all(isinstance(v, str | int | float) for v in data):
        return [(key, [str(v) for v in data])]
    if isinstance(data, list):
        return [pair for v in data for pair in walk(v, key)]
    return [(key, data)]


def error_text(output: str) -> str:
    """The human-readable text of a tool error: the string fields of a JSON body joined into
    sentences (so JSON quoting is not read as quoted values), else the output as it is."""
    data = structured(output)
    if data is None:
        return output or ""
    parts: list[str] = []
    for _, v in walk(data):
        if isinstance(v, str):
            parts.append(v)
        elif isinstance(v, list):
            # messages filed in a list ({"size": ["is not a valid choice"]}), not lists of names
            parts += [m for m in v if " " in m.strip()]
    return ". ".join(p.rstrip(". ") for p in parts if p.strip())
