"""The date a source was last changed, read from front matter whatever its key is called.

Workspaces name the key their own way (``modified``, ``last_updated``, ``revised``, ``dateModified``,
``reviewed_on`` ...). A key counts when its value reads as a calendar date and its name means a
change to the content; a key whose name means creation, expiry or a future date never counts, and
a bare ``date`` / ``as_of`` counts only when no change-named key is present.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import Any

# Stems of words that mean "the content was changed / checked at".
_CHANGE_STEMS = (
    "modif",
    "updat",
    "revis",
    "chang",
    "edit",
    "review",
    "amend",
    "refresh",
    "effect",
    "publish",
    # run together with "date" or shortened: AsciiDoc's "revdate", Hugo's "lastmod"
    "revdate",
    "lastmod",
)
# A bare date key (or one that says only "when") is weaker evidence than a change-named one.
_PLAIN_WORDS = frozenset({"date", "dated", "as", "of", "on", "at", "last", "time", "timestamp", "when"})
# Creation, expiry and scheduled dates say nothing about how current the content is.
_NOT_CHANGE_STEMS = (
    "creat",
    "expir",
    "due",
    "next",
    "until",
    "end",
    "sunset",
    "birth",
    "start",
    "born",
    "valid",
)

_MONTHS = {
    m: i + 1
    for i, names in enumerate(
        (
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        )
    )
    for m in names
}
_ISO = re.compile(r"^\s*(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?:$|[T\s])")
_DAY_MONTH_YEAR = re.compile(r"^\s*(\d{1,2})(?:st|nd|rd|th)?\s+([A-Za-z]+)\.?,?\s+(\d{4})\s*$")
_MONTH_DAY_YEAR = re.compile(r"^\s*([A-Za-z]+)\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\s*$")
_KEY_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def iso_date(value: Any) -> str | None:
    """``YYYY-MM-DD`` for a date, datetime or a string in a common written form; None otherwise."""
    if isinstance(value, dt.datetime):
        return value.date().isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if not isinstance(value, str):
        return None
    m = _ISO.match(value)
    if m:
        return _checked(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    m = _DAY_MONTH_YEAR.match(value)
    if m and m.group(2).lower() in _MONTHS:
        return _checked(int(m.group(3)), _MONTHS[m.group(2).lower()], int(m.group(1)))
    m = _MONTH_DAY_YEAR.match(value)
    if m and m.group(1).lower() in _MONTHS:
        return _checked(int(m.group(3)), _MONTHS[m.group(1).lower()], int(m.group(2)))
    return None


def change_date(meta: Mapping[str, Any]) -> str | None:
    """The latest change date the front matter ``meta`` states, as ``YYYY-MM-DD`` (None if none)."""
    by_strength: dict[int, list[str]] = {2: [], 1: []}
    for key, value in meta.items():
        strength = _key_strength(str(key))
        date = iso_date(value) if strength else None
        if date:
            by_strength[strength].append(date)
    dates = by_strength[2] or by_strength[1]
    return max(dates) if dates else None


def _key_strength(key: str) -> int:
    """2 for a change-named key, 1 for a bare date key, 0 for any other."""
    words = [w.lower() for w in _KEY_WORDS.findall(key)]
    if not words or any(w.startswith(_NOT_CHANGE_STEMS) for w in words):
        return 0
    if any(w.startswith(_CHANGE_STEMS) for w in words):
        return 2
    bare = "date" in words or "dated" in words or (set(words) <= _PLAIN_WORDS and "of" in words)
    return 1 if bare else 0


def _checked(year: int, month: int, day: int) -> str | None:
    try:
        return dt.date(year, month, day).isoformat()
    except ValueError:
        return None
