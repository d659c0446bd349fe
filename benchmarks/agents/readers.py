"""The agents' deterministic "LLM" steps: an entity linker, planners and a reader (regex/templated).

The reader has one deliberate, deterministic bug (the ``reader_error`` plant triggers it): when the
sentence that answers contains ``", formerly"``, it returns the *last* name (or number) of the
sentence instead of the one right after the phrase.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from .world import BRIDGE_QUESTIONS, RELATIONS

NAME = r"[A-Z][\w'-]*(?: [A-Z][\w'-]*)*"
YEAR = r"\d{4}"
_SENT = re.compile(r"(?<=[.!?])\s+")

_BRIDGE_RES = [
    (
        r2,
        re.compile(
            "^" + re.escape(t).replace(r"\{r1\}", r"(?P<r1>\w+)").replace(r"\{e\}", "(?P<e>.+)") + "$"
        ),
    )
    for r2, t in BRIDGE_QUESTIONS.items()
]
_COMPARE_RE = re.compile(r"^Which was released first, (?P<a>.+) or (?P<b>.+)\?$")


def link(entity: str, aliases: Mapping[str, str]) -> str:
    """The entity linker: canonical name of ``entity`` from the world's gazetteer."""
    return aliases.get(entity, entity)


def parse_bridge(question: str) -> tuple[str, str, str] | None:
    """(first relation, second relation, entity) of a bridge question."""
    for r2, pattern in _BRIDGE_RES:
        m = pattern.match(question.strip())
        if m:
            return m.group("r1"), r2, m.group("e")
    return None


def parse_compare(question: str) -> tuple[str, str] | None:
    m = _COMPARE_RE.match(question.strip())
    return (m.group("a"), m.group("b")) if m else None


def _value_pattern(relation: str) -> str:
    return YEAR if relation == "released" else NAME


def read_value(texts: Iterable[str], relation: str, subject: str) -> str:
    """The value the passages give for ``subject``'s ``relation``: the first sentence (in rank order)
    that *starts* with the relation's phrase, else the first that contains it anywhere; "unknown"
    when none does. Deliberate bug: see the module docstring."""
    phrase = RELATIONS[relation][1].format(s=subject)
    value_re = re.compile(re.escape(phrase) + r"\s+(" + _value_pattern(relation) + ")")
    anchored: list[str] = []
    loose: list[str] = []
    for text in texts:
        for sentence in _SENT.split(text or ""):
            if phrase not in sentence:
                continue
            (anchored if sentence.strip().startswith(phrase) else loose).append(sentence)
    for sentence in anchored + loose:
        m = value_re.search(sentence)
        if not m:
            continue
        if ", formerly" in sentence:  # the reader's bug
            rest = sentence[m.start(1) :]
            found = re.findall(_value_pattern(relation), rest)
            if found:
                return found[-1].rstrip(".")
        return m.group(1).rstrip(".")
    return "unknown"


def read_row(row: str, relation: str) -> str:
    """Reads a lookup-table row ``"entity | relation | value[ | note]"``; same bug on ``formerly``."""
    parts = [p.strip() for p in (row or "").split("|")]
    if len(parts) < 3 or parts[2] in ("", "no row"):
        return "unknown"
    if len(parts) > 3 and "formerly" in parts[3]:  # the reader's bug
        names = re.findall(_value_pattern(relation), parts[3])
        if names:
            return names[-1]
    return parts[2]
