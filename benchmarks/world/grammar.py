"""The generated world's question grammar, as fault injection takes it."""

from __future__ import annotations

from benchmarks.world.templates import RELATIONS, parse_sub_query
from causal_middleware.faults.grammar import RelationForms

__all__ = ["WORLD_GRAMMAR", "WorldGrammar"]


class WorldGrammar:
    def parse_sub_query(self, text: str) -> tuple[str, str] | None:
        return parse_sub_query(text)

    def relation(self, name: str) -> RelationForms | None:
        return RELATIONS.get(name)


WORLD_GRAMMAR = WorldGrammar()
