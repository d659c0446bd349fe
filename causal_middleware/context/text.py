"""Lexical helpers shared by the context-debugging stages: tokens, overlap, value spans, slugs.

Everything here is domain-agnostic English text processing; no stage keeps a list of domain words.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from causal_middleware.text import CHAT_STOPWORDS, chat_tokens

# Words that carry the "shape" of a question or a complaint, not its subject.
QUESTION_WORDS = frozenset(
    """
    much many long often soon tell explain need want like get find give show help wondering wonder
    question ask asking asked quick quickly currently current now today anymore still actually really
    sure right wrong correct incorrect outdated said told mean meant think thought go going take takes
    """.split()
)
# Words of complaint and correction: they say something is wrong, not what it is about.
JUDGEMENT_WORDS = frozenset(
    """
    wrong incorrect inaccurate outdated stale old new newer latest longer anymore changed change updated
    update actually really mistaken false true right correct accurate supposed fix fixed ugh seriously
    frustrating annoying useless terrible still keep keeps failing failed again nope nah yeah yep
    """.split()
)
CONVERSATION_WORDS = QUESTION_WORDS | JUDGEMENT_WORDS

# ISO 4217 codes of the most traded currencies: "EUR 5" and "5 EUR" are amounts like "€5".
_CURRENCY_CODES = (
    "usd|eur|gbp|chf|jpy|cny|cad|aud|nzd|sek|nok|dkk|pln|czk|huf|inr|hkd|sgd|zar|mxn|brl|krw|"
    # a code that is also an English word ("try 3 times") is a currency only in capitals
    "(?-i:TRY)"
)
# Numbers written as words ("two", "thirty", "twenty-five"): read as the number they name.
_UNITS_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19,
}  # fmt: skip
_TENS_WORDS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
               "ninety": 90}  # fmt: skip
_WORD_NUM = (
    r"(?:(?:"
    + "|".join(_TENS_WORDS)
    + r")(?:[\s-](?:"
    + "|".join(list(_UNITS_WORDS)[:9])
    + r"))?|"
    + "|".join(sorted(_UNITS_WORDS, key=len, reverse=True))
    + r")(?:\s+hundred)?(?:\s+thousand)?"
)


_WORD_NUM_RE = re.compile(r"\b" + _WORD_NUM + r"\b", re.IGNORECASE)


def _in_digits(span: str) -> str:
    """``span`` with a number written as words put in digits ("two hours" -> "2 hours")."""

    def digits(m: re.Match[str]) -> str:
        n = word_number(m.group(0))
        return m.group(0) if n is None else f"{n:g}"

    return _WORD_NUM_RE.sub(digits, span)


def word_number(text: str) -> float | None:
    """The number a number word names: ``word_number("twenty-five") == 25``."""
    total = 0.0
    words = re.split(r"[\s-]+", text.lower().strip())
    if not words or not all(
        w in _UNITS_WORDS or w in _TENS_WORDS or w in ("hundred", "thousand") for w in words
    ):
        return None
    for w in words:
        if w in ("hundred", "thousand"):
            total *= 100 if w == "hundred" else 1000
        else:
            total += _UNITS_WORDS.get(w) or _TENS_WORDS.get(w) or 0
    return total


_MONEY = (
    r"[$€£¥₹]\s?\d(?:[\d,]*\d)?(?:\.\d+)?(?:\s?(?:million|billion|bn|k|m)(?![a-z]))?|"
    r"\b(?:" + _CURRENCY_CODES + r")\s?\d(?:[\d,]*\d)?(?:\.\d+)?\b|"
    r"\d[\d,]*(?:\.\d+)?\s?(?:" + _CURRENCY_CODES + r"|dollars|euros|pounds)\b|"
    r"\b" + _WORD_NUM + r"\s+(?:dollars|euros|pounds)\b"
)
# An amount in a currency's minor unit, its symbol run on ("25p", "99c", "50¢") or its name after it
# ("25 pence", "10 cents"); read after rates, so "15p per page" stays a rate.
_MINOR_MONEY = r"(?<![\w.,])\d{1,3}(?:(?-i:p|c)|¢|\s?(?:pence|cents?))(?![\w%])"
_PERCENT = r"\d+(?:\.\d+)?\s?%|\d+(?:\.\d+)?\s?percent\b|\b" + _WORD_NUM + r"\s+percent\b"
_DURATION = (
    # "30 days", "2-3 weeks", and the compound adjective "a 12-month warranty"
    r"\d+(?:\.\d+)?(?:\s?-\s?\d+)?[\s-]?(?:business |calendar |working )?"
    r"(?:seconds?|minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?)\b|"
    r"\b" + _WORD_NUM + r"[\s-](?:business |calendar |working )?"
    r"(?:seconds?|minutes?|hours?|days?|weeks?|months?|years?)\b|"
    # one unit named by its article after a preposition of time ("within an hour", "for a week");
    # "twice a day" is a rate
    r"(?:"
    + "|".join(
        f"(?<=\\b{p} )"
        for p in (
            "within",
            "in",
            "for",
            "after",
            "before",
            "over",
            "under",
            "than",
            "about",
            "around",
            "to",
            "of",
        )
    )
    + r")an?\s+(?:business |calendar |working )?(?:minute|hour|day|week|month|year)\b(?!\s*(?:or|and)\s+(?:two|2|so)\b)"
)
# A frequency: a count of times per unit of time ("3 times per week", "two times a day"). Compared
# by count and unit. The one-word counts ("twice a day", "once a month") are read by
# :func:`frequencies` only: alone in a sentence they are how often something happens, not a value.
_PER_UNIT = r"\s+(?:a|an|per|each|every)\s+(?:day|night|week|fortnight|month|year|hour|minute)\b"
_FREQUENCY = r"\b(?:\d+|" + _WORD_NUM + r")\s+times" + _PER_UNIT
_ANY_FREQUENCY = re.compile(
    r"\b(?:(?:once|twice|thrice)|(?:\d+|" + _WORD_NUM + r")\s+times)" + _PER_UNIT, re.IGNORECASE
)
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DATE = (
    # "15 December", "the 3rd of March 2025"
    r"\b\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?(?:,? \d{4})?\b|"
    r"\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}/\d{2,4}|"
    r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.? \d{1,2}(?:st|nd|rd|th)?(?:,? \d{4})?"
)
_TIME = r"\d{1,2}(?::\d{2})?\s?(?:am|pm)\b|\d{1,2}:\d{2}\b"
# Sizes and other measured quantities: a number with a unit ("2 GB", "500MB", "1.5 TB", "3 kg").
_SIZE_UNITS = {
    "b": 1, "byte": 1, "bytes": 1,
    "kb": 1e3, "kilobyte": 1e3, "kilobytes": 1e3, "kib": 2**10,
    "mb": 1e6, "megabyte": 1e6, "megabytes": 1e6, "mib": 2**20,
    "gb": 1e9, "gigabyte": 1e9, "gigabytes": 1e9, "gib": 2**30,
    "tb": 1e12, "terabyte": 1e12, "terabytes": 1e12, "tib": 2**40,
    "pb": 1e15, "petabyte": 1e15, "petabytes": 1e15, "pib": 2**50,
}  # fmt: skip
_MEASURE_UNITS = {
    "mg": ("g", 1e-3), "g": ("g", 1), "grams": ("g", 1), "kg": ("g", 1e3), "kilograms": ("g", 1e3),
    "lb": ("lb", 1), "lbs": ("lb", 1), "pounds": ("lb", 1), "oz": ("oz", 1), "ounces": ("oz", 1),
    "mm": ("m", 1e-3), "cm": ("m", 1e-2), "m": ("m", 1), "km": ("m", 1e3), "meters": ("m", 1),
    "kilometers": ("m", 1e3), "miles": ("mi", 1), "mi": ("mi", 1), "inches": ("in", 1), "in": ("in", 1),
    "ft": ("ft", 1), "feet": ("ft", 1), "foot": ("ft", 1), "yd": ("ft", 3), "yards": ("ft", 3),
    "yard": ("ft", 3), "inch": ("in", 1), "metres": ("m", 1), "kilometres": ("m", 1e3),
    "ml": ("l", 1e-3), "l": ("l", 1), "liters": ("l", 1), "litres": ("l", 1),
    "gallons": ("gal", 1), "gal": ("gal", 1),
    "kw": ("w", 1e3), "kwh": ("wh", 1e3), "mw": ("w", 1e6), "mwh": ("wh", 1e6), "watts": ("w", 1),
    "kilowatts": ("w", 1e3), "volts": ("v", 1),
    "kbps": ("bps", 1e3), "mbps": ("bps", 1e6), "gbps": ("bps", 1e9),
    "ghz": ("hz", 1e9), "mhz": ("hz", 1e6), "khz": ("hz", 1e3),
}  # fmt: skip
_NUM = r"\d[\d,]*(?:\.\d+)?"
_SIZE = _NUM + r"\s?(?:" + "|".join(sorted(_SIZE_UNITS, key=len, reverse=True)) + r")\b"
_MEASURE = (
    # a duration per unit of time is a rate, not a duration: "24 hours per week", "28 hr/week"
    _NUM
    + r"\s?(?:seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?|months?)\s?(?:per\s+|/\s?)"
    + r"(?:second|minute|hour|day|week|fortnight|month|year|term|semester|shift)\b|"
    # rates: "3 cups per person", "40 mg/L", "5 km/h"
    + _NUM
    + r"\s?(?:(?!(?:"
    + "|".join(sorted({*_SIZE_UNITS, *_MEASURE_UNITS}, key=len, reverse=True))
    + r"|seconds?|minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?|times?|percent)\b)"
    + r"[a-zµ]+\s+per\s+[a-z]+|"
    + r"(?!(?:"
    + "|".join(sorted(_SIZE_UNITS, key=len, reverse=True))
    + r"|seconds?|minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?)\b)[a-zµ]+/[a-z]+)\b|"
    + _NUM
    + r"\s?(?:"
    + "|".join(
        sorted((u for u in _MEASURE_UNITS if len(u) > 1 and u not in ("in", "mi")), key=len, reverse=True)
    )
    + r")\b|"
    # temperatures: "20°F", "5 °C", "40 degrees"
    + _NUM
    + r"\s?(?:°\s?[FC]\b|degrees?(?:\s?(?:F|C|fahrenheit|celsius)\b)?)"
)
# Dimensions: two or three numbers joined by "x" ("30 x 20 x 10 cm", "1920x1080"), unit optional.
_DIMENSIONS = (
    r"(?<![\w.])\d+(?:\.\d+)?\s?[x×]\s?\d+(?:\.\d+)?(?:\s?[x×]\s?\d+(?:\.\d+)?)?"
    r"(?:\s?(?:mm|cm|m|in|inches|ft|feet|px|pixels)\b)?"
)
_QUOTED = r"(?<!\w)['\"`“‘]([^'\"`”’\n]{1,60}?)['\"`”’](?!\w)"
# A bare number, unless it is part of a code ("M-30155", "2210-88412", "555-0142") or opens a
# proper name ("14 Harbour Street", "9 Elm Rd": a house number or a label, not a quantity).
_NUMBER = (
    r"(?<![\w.])(?<!\w-)\d(?:[\d,]*\d)?(?:\.\d+)?(?![\w])(?!-\d)"
    r"(?!\s+[A-Z][a-z]+\.?\s+[A-Z][a-z]*\b)"
)

# A position in a calendar or a schedule: "the second week of classes", "the 8th day", "the third
# business day". Compared by rank and unit ("second week" is "2nd week").
_ORDINAL_WORDS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth",
                  "tenth", "eleventh", "twelfth")  # fmt: skip
ORDINAL_WORDS = frozenset(_ORDINAL_WORDS)
_ORDINAL_UNITS = (
    r"(?:day|week|month|term|semester|quarter|year|session|lesson|class|instalment|installment|payment)"
)
_ORDINAL = (
    r"\b(?:"
    + "|".join(_ORDINAL_WORDS)
    + r"|\d{1,3}(?:st|nd|rd|th))\s+(?:(?:business|working|calendar|school)\s+)?"
    + _ORDINAL_UNITS
    + r"\b|"
    # "week 4", "day 10": the unit before its number
    + r"\b(?:week|day|month|term|semester|quarter|session|lesson)\s+\d{1,2}\b(?![.,:/-]?\d)"
)

# A day of the week, one-off or habitual ("on Tuesdays"), or its place in the month ("the second
# Saturday", "the last Friday"): a schedule states it as its value.
_WEEKDAY = (
    r"\b(?:(?:" + "|".join(_ORDINAL_WORDS[:5]) + r"|last|\d(?:st|nd|rd|th))\s+)?"
    r"(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)days?\b"
)

VALUE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("money", re.compile(_MONEY, re.IGNORECASE)),
    ("percent", re.compile(_PERCENT, re.IGNORECASE)),
    ("frequency", re.compile(_FREQUENCY, re.IGNORECASE)),
    ("dimensions", re.compile(_DIMENSIONS, re.IGNORECASE)),
    ("size", re.compile(_SIZE, re.IGNORECASE)),
    ("measure", re.compile(_MEASURE, re.IGNORECASE)),
    ("money", re.compile(_MINOR_MONEY, re.IGNORECASE)),
    ("date", re.compile(_DATE, re.IGNORECASE)),
    ("duration", re.compile(_DURATION, re.IGNORECASE)),
    ("time", re.compile(_TIME, re.IGNORECASE)),
    ("ordinal", re.compile(_ORDINAL, re.IGNORECASE)),
    ("weekday", re.compile(_WEEKDAY, re.IGNORECASE)),
    ("quoted", re.compile(_QUOTED)),
    ("number", re.compile(_NUMBER)),
)


# Kinds of value that state a measured fact (not a bare number or a quoted phrase): two different
# values of one of these kinds for the same subject contradict each other.
# (A weekday is a value but not a measured one: "the carrier says Monday" reports an outcome as
# often as it states a schedule.)
MEASURED_KINDS = (
    "money",
    "percent",
    "duration",
    "date",
    "time",
    "size",
    "measure",
    "dimensions",
    "ordinal",
    "frequency",
)


def content_tokens(text: str | None, *, drop: Iterable[str] = ()) -> list[str]:
    """Tokens minus stopwords, one-letter tokens and anything in ``drop``, order kept."""
    dropped = set(drop)
    out = []
    for tok in chat_tokens(text):
        tok = tok.replace("'", "")
        if len(tok) < 2 or tok in CHAT_STOPWORDS or tok in dropped:
            continue
        out.append(tok)
    return out


@functools.lru_cache(maxsize=65536)
def stem(token: str) -> str:
    """A crude plural/verb-ending stemmer, enough for overlap measures."""
    for suffix in ("ing", "ies", "es", "ed", "s"):
        if token.endswith(suffix) and len(token) - len(suffix) >= 3:
            return token[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return token


def share_stem(a: Iterable[str], b: Iterable[str]) -> bool:
    """Whether two sets of stems share one, a silent final "e" aside (the stemmer leaves
    "reserve" but cuts "reserved" to "reserv")."""
    return bool({t.rstrip("e") for t in a} & {t.rstrip("e") for t in b})


def term_set(text: str | None, *, drop: Iterable[str] = ()) -> set[str]:
    """Stemmed content tokens of ``text`` as a set."""
    return {stem(t) for t in content_tokens(text, drop=drop)}


@functools.lru_cache(maxsize=8192)
def _index_terms(text: str) -> tuple[str, ...]:
    return tuple(stem(t) for t in content_tokens(text))


def index_terms(text: str) -> list[str]:
    """The knowledge-base search terms of a text: stemmed content tokens, in order, repeats kept."""
    return list(_index_terms(text))


def jaccard(a: set[str], b: set[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def coverage(needles: set[str], haystack: set[str]) -> float:
    """Share of ``needles`` found in ``haystack`` (0 when there are no needles)."""
    if not needles:
        return 0.0
    return len(needles & haystack) / len(needles)


def normalize(text: str | None) -> str:
    """Lowercase, unify quotes and collapse whitespace: the form used for containment tests."""
    if not text:
        return ""
    text = text.replace("’", "'").replace("‘", "'").replace("“", '"').replace("”", '"')
    return re.sub(r"\s+", " ", text).strip().lower()


def contains(haystack: str | None, needle: str | None) -> bool:
    """Whether ``needle`` occurs in ``haystack`` after normalisation, on token boundaries."""
    n = normalize(needle).strip(" .,;:!?'\"`")
    if not n:
        return False
    raw = (needle or "").strip(" .,;:!?'\"`")
    if _CODE_LITERAL.fullmatch(raw):
        # A code literal (``DAMAGED``, ``WRONG_ITEM``) is not the English word it spells: match its case.
        h = re.sub(r"\s+", " ", haystack or "")
        return re.search(r"(?<![\w$€£])" + re.escape(raw) + r"(?![\w%])", h) is not None
    h = normalize(haystack)
    # a number is not part of a longer one: "8" is not in "8.35", "800" is not in "1,800"
    before = r"(?<!\d[.,])" if n[:1].isdigit() else ""
    after = r"(?![.,]\d)" if n[-1:].isdigit() else ""
    pattern = before + r"(?<![\w$€£])" + re.escape(n) + r"(?![\w%])" + after
    return re.search(pattern, h) is not None


# Upper-case identifiers: four or more capitals, or capitals joined by underscores.
_CODE_LITERAL = re.compile(r"[A-Z][A-Z0-9]{3,}|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")


def find_values(text: str | None) -> list[tuple[str, str]]:
    """Value-like spans (money, percentages, dates, durations, times, quoted strings, numbers).

    Returns ``(kind, span)`` pairs in order of appearance; a span inside a longer one is dropped.
    """
    if not text:
        return []
    found: list[tuple[int, int, str, str]] = []
    for kind, pattern in VALUE_PATTERNS:
        for m in pattern.finditer(text):
            start, end = (m.start(1), m.end(1)) if kind == "quoted" else (m.start(), m.end())
            if any(s <= start and end <= e for s, e, _, _ in found):
                continue
            found.append((start, end, kind, text[start:end].strip()))
    found.sort()
    return [(kind, span) for _, _, kind, span in found]


def value_kind(value: str) -> str:
    """The kind of a value span as :func:`find_values` would classify it ('phrase' otherwise)."""
    spans = find_values(value)
    if spans and normalize(spans[0][1]) == normalize(value):
        return spans[0][0]
    if _ARTICLE_UNIT.fullmatch(value.strip()):
        return "duration"  # "an hour", read out of its sentence
    return "phrase"


_ARTICLE_UNIT = re.compile(
    r"an?\s+(?:business |calendar |working )?(?:minute|hour|day|week|month|year)", re.IGNORECASE
)


_DURATION_SECONDS = {
    "second": 1, "sec": 1, "minute": 60, "min": 60, "hour": 3600, "hr": 3600, "day": 86400,
    "week": 7 * 86400, "month": 30 * 86400, "year": 365 * 86400,
}  # fmt: skip
_QTY = re.compile(r"(?P<n>\d[\d,]*(?:\.\d+)?)[\s-]?(?P<u>[a-z]+(?: [a-z]+)?)?", re.IGNORECASE)


def magnitude(kind: str, span: str) -> tuple[str, float] | None:
    """A comparable ``(unit, amount)`` for a measured value: sizes in bytes, durations in seconds
    (business/working days kept apart from calendar time), other quantities in their base unit.

    ``magnitude("size", "2 GB") == ("bytes", 2e9)``; None for kinds without a magnitude.
    """
    span = re.sub(r"^an?\s+", "1 ", _in_digits(span), flags=re.IGNORECASE)
    if kind == "money":
        return _money(span)
    if kind == "frequency":
        return _frequency(span)
    if kind not in ("size", "measure", "duration"):
        return None
    m = _QTY.search(span)
    if not m:
        return None
    amount = float(m.group("n").replace(",", ""))
    unit = (m.group("u") or "").lower().strip()
    if kind == "size":
        factor = _SIZE_UNITS.get(unit.split()[0] if unit else "")
        return ("bytes", amount * factor) if factor else None
    if kind == "measure":
        if "/" in span or " per " in span.lower():
            return None  # a rate compares as written
        degrees = re.search(r"°\s?([FC])|degrees?\s?([FC]|fahrenheit|celsius)?", span, re.IGNORECASE)
        if degrees:
            scale = (degrees.group(1) or degrees.group(2) or "").lower()[:1]
            return (f"deg{scale}", amount)
        base = _MEASURE_UNITS.get(unit.split()[0] if unit else "")
        return (base[0], amount * base[1]) if base else None
    if re.search(r"\d\s?-\s?\d", span):
        return None
    words = unit.split()
    qualifier = ""
    if words and words[0] in ("business", "working", "calendar"):
        qualifier, words = ("business" if words[0] != "calendar" else ""), words[1:]
    word = words[0] if words else ""
    word = word[:-1] if word.endswith("s") else word
    secs = _DURATION_SECONDS.get(word)
    return (f"{qualifier}seconds", amount * secs) if secs else None


_ONCE = {"once": 1, "twice": 2, "thrice": 3}


def _frequency(span: str) -> tuple[str, float] | None:
    """``("per day", 2.0)`` for "twice a day", "2 times per day" and "two times a day" alike."""
    words = normalize(_in_digits(span)).split()
    if len(words) < 2:
        return None
    count = _ONCE.get(words[0])
    if count is None:
        m = re.match(r"\d+", words[0])
        if m is None:
            return None
        count = int(m.group(0))
    return f"per {words[-1]}", float(count)


_CURRENCY_NAMES = {"$": "usd", "€": "eur", "£": "gbp", "¥": "jpy", "₹": "inr", "dollars": "usd", "euros": "eur",
                   "pounds": "gbp"}  # fmt: skip
_SCALE = {"k": 1e3, "m": 1e6, "million": 1e6, "billion": 1e9, "bn": 1e9}


def _money(span: str) -> tuple[str, float] | None:
    """``("eur", 60.0)`` for "EUR 60", "60 euros" and "€60" alike; a minor unit in hundredths
    ("25p" is ``("gbp", 0.25)``, "99c" ``("cent", 0.99)``)."""
    m = re.search(r"\d[\d,]*(?:\.\d+)?", span)
    if not m:
        return None
    minor = (
        re.fullmatch(r"\s*(?:(?P<p>p|pence)|c|¢|cents?)\s*", span[m.end() :])
        if not span[: m.start()].strip()
        else None
    )
    if minor:
        return ("gbp" if minor.group("p") else "cent"), float(m.group(0)) / 100
    amount = float(m.group(0).replace(",", ""))
    rest = (span[: m.start()] + " " + span[m.end() :]).lower().split()
    currency = next((_CURRENCY_NAMES.get(w, w) for w in rest if w not in _SCALE), None)
    if currency is None:
        sym = next((c for c in span if c in _CURRENCY_NAMES), None)
        currency = _CURRENCY_NAMES.get(sym or "")
    scale = next((_SCALE[w] for w in rest if w in _SCALE), 1.0)
    return (currency, amount * scale) if currency else None


def with_number(span: str, number: str) -> str:
    """``span`` with its number replaced: ``with_number("50 GB", "100") == "100 GB"``."""
    return re.sub(r"\d[\d,]*(?:\.\d+)?", number.strip(), span, count=1)


def in_answer_units(values: list[tuple[str, str]], answer: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``values`` with each bare number read in the unit of the answer's one measured value: after
    "the limit is 50 GB", "it's 100" states ``("size", "100 GB")`` and "not 50" names the answer's
    own value. Numbers stay bare when the answer has no single measured value (or they look like a
    year)."""
    measured = [(k, v) for k, v in answer if k in ("size", "measure", "duration", "percent", "money")]
    if not measured:
        # after "quiet hours start at 9 pm", "the poster says 10" names an hour
        measured = [(k, v) for k, v in answer if k == "time"]
    if len({normalize(v) for _, v in measured}) != 1:
        return values
    kind, span = measured[0]
    return [
        (kind, with_number(span, v)) if k == "number" and not re.fullmatch(r"(?:19|20)\d\d", v) else (k, v)
        for k, v in values
    ]


def frequencies(text: str | None) -> list[str]:
    """The frequencies ``text`` states, one-word counts included ("twice a day", "3 times a week")."""
    return [m.group(0) for m in _ANY_FREQUENCY.finditer(text or "")]


def same_value(a: str | None, b: str | None) -> bool:
    """Whether two value spans state the same value: equal text, or equal magnitude when both are
    measured in convertible units ("2 GB" == "2GB" == "2000 MB"; "48 hours" == "2 days")."""
    if a is None or b is None:
        return a is b
    if normalize(a) == normalize(b):
        return True
    if _ANY_FREQUENCY.fullmatch(a.strip()) and _ANY_FREQUENCY.fullmatch(b.strip()):
        return _frequency(a) == _frequency(b)
    ka, kb = value_kind(a), value_kind(b)
    if ka != kb:
        return False
    if ka == "time":
        return _same_clock(a, b)
    if ka == "ordinal":
        return _rank(a) == _rank(b)
    if ka == "weekday":
        return _weekday(a) == _weekday(b)
    if ka == "date":
        da, db = _calendar_day(a), _calendar_day(b)
        return da is not None and da == db
    if ka == "percent":
        na, nb = (re.search(r"\d+(?:\.\d+)?", _in_digits(v)) for v in (a, b))
        return na is not None and nb is not None and float(na.group(0)) == float(nb.group(0))
    ma, mb = magnitude(ka, a), magnitude(kb, b)
    return ma is not None and mb is not None and ma[0] == mb[0] and abs(ma[1] - mb[1]) <= 1e-9 * max(ma[1], 1)


def _weekday(span: str) -> tuple[int, str]:
    """``(2, "saturday")`` for "second Saturday" and "2nd Saturdays"; rank 0 for a bare day."""
    words = normalize(span).split()
    day = re.sub(r"s$", "", words[-1])
    rank = 0
    if len(words) > 1:
        digits = re.match(r"\d+", words[0])
        rank = (
            int(digits.group(0))
            if digits
            else -1
            if words[0] == "last"
            else _ORDINAL_WORDS.index(words[0]) + 1
            if words[0] in _ORDINAL_WORDS
            else 0
        )
    return rank, day


def _rank(span: str) -> tuple[int, str] | None:
    """``(2, "week")`` for "second week" and "2nd week"."""
    words = normalize(span).split()
    if not words:
        return None
    if re.fullmatch(r"\d+", words[-1]):
        words = [words[-1], *words[:-1]]  # "week 4" is the 4th week
    head = words[0]
    digits = re.match(r"\d+", head)
    rank = (
        int(digits.group(0)) if digits else (_ORDINAL_WORDS.index(head) + 1 if head in _ORDINAL_WORDS else 0)
    )
    unit = words[-1].replace("installment", "instalment")
    return (rank, " ".join([*words[1:-1], unit])) if rank else None


def _calendar_day(span: str) -> tuple[int, int, int | None] | None:
    """``(month, day, year)`` of a written or ISO date ("Dec 15", "15 December 2025", "2025-12-15")."""
    iso = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", span.strip())
    if iso:
        return int(iso.group(2)), int(iso.group(3)), int(iso.group(1))
    month = next((i + 1 for i, m in enumerate(_MONTHS) if re.search(rf"\b{m}", span, re.IGNORECASE)), None)
    day = re.search(r"\b(\d{1,2})(?:st|nd|rd|th)?\b", span)
    year = re.search(r"\b(\d{4})\b", span)
    if month is None or day is None:
        return None
    return month, int(day.group(1)), int(year.group(1)) if year else None


_CLOCK = re.compile(r"(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s?(?P<half>am|pm)?", re.IGNORECASE)


def _same_clock(a: str, b: str) -> bool:
    """Whether two clock times name the same time: "9:30" is "9:30 pm" (a time without am/pm may
    be either half of the day), "21:30" is "9:30 pm", "6 pm" is "6:00 pm"."""
    ca, cb = _CLOCK.fullmatch(a.strip()), _CLOCK.fullmatch(b.strip())
    if ca is None or cb is None:
        return False

    def minutes(c: re.Match[str]) -> tuple[int, str | None]:
        hour, half = int(c.group("h")), (c.group("half") or "").lower() or None
        if half == "pm" and hour < 12:
            hour += 12
        elif half == "am" and hour == 12:
            hour = 0
        elif half is None and hour > 12:
            half = "24h"
        return hour * 60 + int(c.group("m") or 0), half

    (ma, ha), (mb, hb) = minutes(ca), minutes(cb)
    if ha is None or hb is None:
        return ma % 720 == mb % 720
    return ma == mb


def sentences(text: str | None) -> list[str]:
    """Split text into sentences and list items (front matter and markdown markers kept as lines)."""
    if not text:
        return []
    out: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        for part in re.split(r"(?<=[.!?])\s+(?=[A-Za-z0-9\"'($€£])", line):
            part = part.strip()
            if part:
                out.append(part)
    return out


def slugify(text: str, *, max_words: int = 5) -> str:
    """``"Overdraft fee (2023)"`` -> ``"overdraft-fee-2023"``."""
    words = chat_tokens(text)[:max_words]
    return "-".join(w.replace("'", "").replace("_", "-") for w in words) or "untitled"


def subject_phrase(question: str) -> str:
    """The subject of a question: its content words without the question's shape words.

    ``"How much is the overdraft fee?"`` -> ``"overdraft fee"``.
    """
    words = content_tokens(question, drop=QUESTION_WORDS)
    return " ".join(words)


def quote(text: str, limit: int = 160) -> str:
    """A one-line excerpt for evidence fields."""
    flat = re.sub(r"\s+", " ", text or "").strip()
    return flat if len(flat) <= limit else flat[: limit - 3].rstrip() + "..."


def term_seq(text: str | None, *, drop: Iterable[str] = QUESTION_WORDS) -> list[str]:
    """Stemmed content tokens in order, without ``drop`` words (question words) and value spans."""
    if not text:
        return []
    return list(_term_seq(text, drop if isinstance(drop, frozenset) else frozenset(drop)))


@functools.lru_cache(maxsize=16384)
def _term_seq(text: str, drop: frozenset[str]) -> tuple[str, ...]:
    for _, span in find_values(text):
        text = text.replace(span, " ")
    return tuple(stem(t) for t in content_tokens(text, drop=drop))


def bigrams(seq: list[str]) -> set[tuple[str, str]]:
    return set(zip(seq, seq[1:], strict=False))


def relevance(subject: str, *texts: str, drop: Iterable[str] = QUESTION_WORDS) -> float:
    """How much ``texts`` (e.g. a sentence and its document's title) are about ``subject``.

    The share of the subject's words they contain, halved when the subject has several words and
    no two of them appear side by side in any text (so "returned check fee" is not matched by a
    sentence about "checking account fees").
    """
    subj = term_seq(subject, drop=drop)
    if not subj:
        return 0.0
    seqs = [term_seq(t, drop=drop) for t in texts if t]
    words = set().union(*seqs) if seqs else set()
    score = coverage(set(subj), words)
    if len(set(subj)) >= 2 and not any(bigrams(subj) & bigrams(s) for s in seqs):
        score *= 0.5
    return score


_INFORMAL = {
    "thats": "that's",
    "its": "it's",
    "whats": "what's",
    "theres": "there's",
    "dont": "don't",
    "doesnt": "doesn't",
    "didnt": "didn't",
    "isnt": "isn't",
    "arent": "aren't",
    "wasnt": "wasn't",
    "werent": "weren't",
    "cant": "can't",
    "couldnt": "couldn't",
    "shouldnt": "shouldn't",
    "wouldnt": "wouldn't",
    "wont": "won't",
    "youre": "you're",
    "youve": "you've",
    "theyre": "they're",
    "im": "I'm",
    "ive": "I've",
}
_INFORMAL_RE = re.compile(r"\b(" + "|".join(_INFORMAL) + r")\b", re.IGNORECASE)


def expand_informal(text: str) -> str:
    """Restore the apostrophe of chat-style contractions ("thats wrong" -> "that's wrong") and
    unify curly quotes, so patterns written for edited text also match casual text."""
    text = text.replace("’", "'").replace("‘", "'")

    def fix(m: re.Match[str]) -> str:
        word = m.group(1)
        out = _INFORMAL[word.lower()]
        return out[0].upper() + out[1:] if word[0].isupper() else out

    return _INFORMAL_RE.sub(fix, text)
