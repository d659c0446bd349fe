"""Every prompt of the reference agent, and the parsers for the replies they ask for.

Replies are one keyword line each (``SUBQUERY: ...``, ``FACT: ...``, ``ANSWER: ...``), which any
chat model can follow and a regex can read. The text layout (``Question:``, ``Facts found so
far:``, ``Evidence ...:`` blocks) is also what ``benchmarks.models.offline.OfflineChatModel``
reads, so change both together (``tests/agent`` runs them end to end).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from benchmarks.models.offline_prompts import register_rewording

SYSTEM = (
    "You are a careful research agent. You answer multi-hop questions by searching a text corpus "
    "one fact at a time: each search looks up one fact about one entity, and the answer found in "
    "one step becomes the subject of the next. Use only the evidence you are shown. Follow the "
    "reply format exactly."
)

DECIDE = """Question: {question}

Facts found so far:
{facts}

Searches used: {used} of {budget}.

Decide the next step. If the facts answer the question, reply with one line:
ANSWER: <the final answer>
Otherwise reply with one line giving the next search, a question about one fact of one entity:
SUBQUERY: <the search>"""

# Evidence before the sub-question and an instruction to copy the answering sentence's value:
# with the first wording (READ_FIRST) Qwen2.5-Coder 1.5B answered NONE on 7 of 15 reads whose
# evidence held the answer, with this one on 2 (docs/local-model.md). The offline model hashes
# this prompt as READ_FIRST, so the rewording re-drew none of its runs.
READ = """Question: {question}

Facts found so far:
{facts}

Evidence (most relevant first):
{evidence}

Current sub-question: {sub_query}

Find the sentence of the evidence that answers the current sub-question and copy its answer (a
name, year or number). Reply with one line:
FACT: <the answer>
Reply FACT: NONE only if no sentence of the evidence answers it.
You may add lines NOTE: <something useful for later searches, e.g. "X is also known as Y">."""

READ_FIRST = """Question: {question}

Facts found so far:
{facts}

Current sub-question: {sub_query}

Evidence (most relevant first):
{evidence}

Answer the current sub-question from the evidence alone. Reply with one line:
FACT: <the answer: a name, year or number>
or, when the evidence does not say, FACT: NONE
You may add lines NOTE: <something useful for later searches, e.g. "X is also known as Y">."""

register_rewording(READ, READ_FIRST)

ANSWER = """Question: {question}

Facts found so far:
{facts}

Give the final answer to the question, as short as possible (a name, year or number). The
facts form a chain: each search's fact is the subject of the next, so the answer is usually the
fact of the last search. Reply "unknown" only when no fact answers the question. Reply with one
line:
ANSWER: <the final answer>"""

NO_FACTS = "(none yet)"
NO_EVIDENCE = "(no documents were retrieved)"
NOT_FOUND = "NOT FOUND"


def format_facts(hops: Sequence[Mapping[str, Any]]) -> str:
    """One numbered line per search made: ``N. <sub-query> -> <fact or NOT FOUND>`` plus notes."""
    if not hops:
        return NO_FACTS
    lines = []
    for i, hop in enumerate(hops, start=1):
        fact = hop.get("fact")
        lines.append(
            f"{i}. {_one_line(hop.get('sub_query') or '')} -> {_one_line(fact) if fact else NOT_FOUND}"
        )
        for note in hop.get("notes") or []:
            lines.append(f"   note: {_one_line(note)}")
    return "\n".join(lines)


def format_evidence(documents: Sequence[Mapping[str, Any]]) -> str:
    """One line per document: ``[rank] <title> (id <id>): <text>``."""
    if not documents:
        return NO_EVIDENCE
    return "\n".join(
        f"[{rank}] {_one_line(d.get('title') or '')} (id {d.get('id')}): {_one_line(d.get('text') or '')}"
        for rank, d in enumerate(documents, start=1)
    )


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


_PLAN_REF = re.compile(r"#(\d+)")


def fill_plan_step(step: str, hops: Sequence[Mapping[str, Any]]) -> str:
    """A plan step with each ``#N`` replaced by the fact search N found (``unknown`` when it found
    none, or when there is no search N yet)."""

    def value(match: re.Match[str]) -> str:
        n = int(match.group(1))
        fact = hops[n - 1].get("fact") if 1 <= n <= len(hops) else None
        return _one_line(fact) if fact else "unknown"

    return _one_line(_PLAN_REF.sub(value, step))


def decide_messages(
    question: str, hops: Sequence[Mapping[str, Any]], used: int, budget: int
) -> list[BaseMessage]:
    body = DECIDE.format(question=_one_line(question), facts=format_facts(hops), used=used, budget=budget)
    return [SystemMessage(SYSTEM), HumanMessage(body)]


def read_messages(
    question: str, hops: Sequence[Mapping[str, Any]], sub_query: str, documents: Sequence[Mapping[str, Any]]
) -> list[BaseMessage]:
    body = READ.format(
        question=_one_line(question),
        facts=format_facts(hops),
        sub_query=_one_line(sub_query),
        evidence=format_evidence(documents),
    )
    return [SystemMessage(SYSTEM), HumanMessage(body)]


def answer_messages(question: str, hops: Sequence[Mapping[str, Any]]) -> list[BaseMessage]:
    body = ANSWER.format(question=_one_line(question), facts=format_facts(hops))
    return [SystemMessage(SYSTEM), HumanMessage(body)]


# --- reply parsers -------------------------------------------------------------------------
_LINE = re.compile(
    r"^\s*\**\s*(?P<key>SUBQUERY|ANSWER|FACT|NOTE)\s*\**\s*:\s*\**\s*(?P<value>.*?)\s*\**\s*$", re.I | re.M
)
_NONE_VALUES = frozenset({"none", "not found", "unknown", "n/a", ""})


def _fields(text: str) -> list[tuple[str, str]]:
    return [
        (m.group("key").upper(), m.group("value").strip().strip('"').strip()) for m in _LINE.finditer(text)
    ]


def parse_decision(text: str) -> tuple[Literal["search", "answer"], str]:
    """``("search", sub_query)`` or ``("answer", draft answer)``; the first keyword line wins.

    A reply with neither keyword counts as a decision to answer with that text, so a confused
    model stops instead of searching for nonsense.
    """
    for key, value in _fields(text):
        if key == "SUBQUERY" and value:
            # small models echo the facts block's "<search> -> <fact>" layout into the search
            query = value.split(" -> ")[0].strip()
            return "search", query or value
        if key == "ANSWER":
            return "answer", value
    return "answer", text.strip()


def parse_fact(text: str) -> tuple[str | None, list[str]]:
    """(the extracted fact or None, notes)."""
    fact: str | None = None
    seen_fact = False
    notes = []
    for key, value in _fields(text):
        if key == "FACT" and not seen_fact:
            seen_fact = True
            fact = None if value.casefold() in _NONE_VALUES else value
        elif key == "NOTE" and value:
            notes.append(value)
    return fact, notes


def parse_answer(text: str) -> str:
    for key, value in _fields(text):
        if key == "ANSWER":
            return value
    return text.strip()
