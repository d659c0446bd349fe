"""What fault injection knows about the language of a task's questions and passages.

Faults that write a false or stale statement read better when phrased the way the corpus states
facts; faults that target a hop's subject need the sub-query parsed. Both depend on the task: a
benchmark world with a fixed question grammar can say much, a user's free-text task little. The
core takes a :class:`QuestionGrammar`; :data:`PLAIN_GRAMMAR` (no relations) is the default, and
every family falls back to plain wording when the grammar has nothing to offer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "ALIAS_PATTERNS",
    "CONFIDENCE_MARKERS",
    "PLAIN_GRAMMAR",
    "PlainGrammar",
    "QuestionGrammar",
    "RelationForms",
]

# A statement prefixed with one of these reads as a confident assertion; a reader susceptible to
# false premises believes it over conflicting evidence.
CONFIDENCE_MARKERS: tuple[str, ...] = (
    "It is well established that ",
    "As everyone knows, ",
    "Official records confirm that ",
    "Contrary to earlier reports, ",
)

# "X, also known as Y, ..." opening a passage names one entity twice.
ALIAS_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"^(?P<a>[A-Z][^,]*?), also known as (?P<b>[^,]+?),"),
    re.compile(r"^(?P<a>[A-Z][^,]*?), commonly called (?P<b>[^,]+?),"),
)


class RelationForms(Protocol):
    """How passages state one relation: ``{s}``/``{o}`` (and ``{year}``) slot templates."""

    @property
    def object(self) -> str: ...  # the entity type of the relation's value ("city", "year", ...)
    @property
    def statements(self) -> tuple[str, ...]: ...
    @property
    def dated_statements(self) -> tuple[str, ...]: ...


class QuestionGrammar(Protocol):
    def parse_sub_query(self, text: str) -> tuple[str, str] | None:
        """``(relation, subject)`` of a single-hop sub-query, or None when it is not one."""
        ...

    def relation(self, name: str) -> RelationForms | None:
        """The named relation's forms, or None when the grammar does not know it."""
        ...


@dataclass(frozen=True)
class PlainGrammar:
    """No relations: sub-queries are not parsed, statements use plain wording."""

    def parse_sub_query(self, text: str) -> tuple[str, str] | None:
        return None

    def relation(self, name: str) -> RelationForms | None:
        return None


PLAIN_GRAMMAR = PlainGrammar()
