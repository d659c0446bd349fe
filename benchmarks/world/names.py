"""Syllable-based names for generated entities, so no real-world knowledge can answer a question.

Every name is built from invented syllables (plus a few English words for organisation
suffixes and work titles); :class:`NameForge` guarantees uniqueness within one world and makes
near-namesakes (one letter different, or sharing a token) for distractors.
"""

from __future__ import annotations

import random
from collections.abc import Callable

_ONSETS = (
    "b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z",
    "br", "dr", "kr", "tr", "st", "th", "sh", "gr", "h", "j",
)  # fmt: skip
_VOWELS = ("a", "e", "i", "o", "u", "a", "e", "o", "ai", "ou")
_CODAS = ("n", "r", "l", "s", "m", "k", "v")
_CODA_RATE = 0.25

_ORG_SUFFIXES = {
    "company": ("Industries", "Group", "Holdings", "Systems", "Works", "Dynamics", "Trading"),
    "publisher": ("Press", "Books", "Publishing", "Records", "Editions"),
    "university": ("University", "Institute", "Academy", "College"),
}
_CITY_PREFIXES = ("Port", "Fort", "Lake", "Upper", "East", "West")
_COUNTRY_SUFFIXES = ("ia", "land", "mark", "ara", "eth", "ovia")
_TITLE_ADJECTIVES = (
    "Silent", "Hollow", "Crimson", "Distant", "Broken", "Golden", "Last", "Quiet", "Northern",
    "Hidden", "Burning", "Pale", "Winter", "Iron", "Glass", "Second", "Little", "Wandering",
)  # fmt: skip
_TITLE_NOUNS = ("Nights", "Rising", "Songs", "Harbour", "Letters", "Garden", "Tide", "Crossing", "Hours")

VOWEL_LETTERS = "aeiou"

# Words many names share; a shared generic word does not make two names look alike.
GENERIC_NAME_WORDS: frozenset[str] = frozenset(
    w.casefold()
    for w in (
        *(s for group in _ORG_SUFFIXES.values() for s in group),
        *_CITY_PREFIXES,
        *_TITLE_ADJECTIVES,
        *_TITLE_NOUNS,
        "The",
    )
)


class NameForge:
    """Makes unique invented names from one seeded ``random.Random``."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    # --- building blocks -----------------------------------------------------------------
    def syllable(self) -> str:
        r = self.rng
        coda = r.choice(_CODAS) if r.random() < _CODA_RATE else ""
        return r.choice(_ONSETS) + r.choice(_VOWELS) + coda

    def word(self, min_syllables: int = 2, max_syllables: int = 3) -> str:
        n = self.rng.randint(min_syllables, max_syllables)
        return "".join(self.syllable() for _ in range(n)).capitalize()

    def claim(self, name: str) -> bool:
        """Reserve ``name``; False when it is already taken (case-insensitive)."""
        key = name.casefold()
        if key in self.used:
            return False
        self.used.add(key)
        return True

    def _unique(self, make: Callable[[], str]) -> str:
        for _ in range(200):
            name = make()
            if self.claim(name):
                return name
        raise RuntimeError("name space exhausted; this should not happen below millions of entities")

    # --- entity names --------------------------------------------------------------------
    def person(self) -> str:
        return self._unique(lambda: f"{self.word(2, 2)} {self.word(2, 3)}")

    def org(self, kind: str) -> str:
        suffixes = _ORG_SUFFIXES[kind]
        return self._unique(lambda: f"{self.word(2, 3)} {self.rng.choice(suffixes)}")

    def city(self) -> str:
        def make() -> str:
            if self.rng.random() < 0.2:
                return f"{self.rng.choice(_CITY_PREFIXES)} {self.word(2, 2)}"
            return self.word(2, 3)

        return self._unique(make)

    def country(self) -> str:
        return self._unique(lambda: self.word(1, 2) + self.rng.choice(_COUNTRY_SUFFIXES))

    def work(self) -> str:
        def make() -> str:
            if self.rng.random() < 0.6:
                return f"The {self.rng.choice(_TITLE_ADJECTIVES)} {self.word(2, 3)}"
            return f"{self.word(2, 3)} {self.rng.choice(_TITLE_NOUNS)}"

        return self._unique(make)

    def alias_word(self) -> str:
        return self._unique(lambda: self.word(2, 2))

    # --- near-namesakes ------------------------------------------------------------------
    def one_letter_off(self, name: str) -> str | None:
        """``name`` with one vowel of its last token changed ("Oruko" -> "Oruka"); None if impossible."""
        tokens = name.split(" ")
        last = tokens[-1]
        positions = [i for i, ch in enumerate(last) if ch.lower() in VOWEL_LETTERS]
        self.rng.shuffle(positions)
        for i in positions:
            for v in self.rng.sample(VOWEL_LETTERS, len(VOWEL_LETTERS)):
                if v == last[i].lower():
                    continue
                new_char = v.upper() if last[i].isupper() else v
                candidate = " ".join([*tokens[:-1], last[:i] + new_char + last[i + 1 :]])
                if self.claim(candidate):
                    return candidate
        return None

    def shared_token(self, name: str, entity_type: str, org_kind: str | None = None) -> str | None:
        """A different name sharing one token with ``name`` ("Velmora Industries" -> "Velmora Press")."""
        tokens = name.split(" ")
        for _ in range(20):
            if entity_type == "person":
                candidate = f"{self.word(2, 2)} {tokens[-1]}"
            elif entity_type == "org":
                suffixes = [s for s in _ORG_SUFFIXES[org_kind or "company"] if s != tokens[-1]]
                candidate = f"{' '.join(tokens[:-1])} {self.rng.choice(suffixes)}"
            elif entity_type == "work" and tokens[0] == "The":
                adjectives = [a for a in _TITLE_ADJECTIVES if a != tokens[1]]
                candidate = f"The {self.rng.choice(adjectives)} {' '.join(tokens[2:])}"
            elif entity_type == "work":
                nouns = [n for n in _TITLE_NOUNS if n != tokens[-1]]
                candidate = f"{' '.join(tokens[:-1])} {self.rng.choice(nouns)}"
            elif entity_type == "city":
                candidate = f"{self.rng.choice(_CITY_PREFIXES)} {tokens[-1]}"
            else:
                return None
            if self.claim(candidate):
                return candidate
        return None

    def acronym(self, name: str) -> str:
        """An organisation's short form: initials of its syllable-ish chunks plus its suffix's initial."""
        core, suffix = name.rsplit(" ", 1)
        letters = [core[0]] + [ch for ch in core[1:] if ch.lower() not in VOWEL_LETTERS][:2]
        base = ("".join(letters) + suffix[0]).upper()
        candidate = base
        n = 2
        while not self.claim(candidate):
            candidate = f"{base}{n}"
            n += 1
        return candidate
