"""How the offline model reads a prompt: plain-text conventions, no hidden fields.

The reference agent's prompts (``benchmarks.reference_agent.prompts``)
are written in these conventions, and so can any other agent's prompts that want the offline
model to play along:

- ``Question: <text>`` on its own line;
- a facts block after ``Facts found so far:``, one numbered line per search,
  ``N. <sub-query> -> <answer>`` (``NOT FOUND`` when the search gave nothing), optionally followed
  by indented ``note: <text>`` lines;
- ``Searches used: U of B.``;
- ``Current sub-question: <text>`` for a reading task;
- an evidence block after ``Evidence``, one document per line,
  ``[rank] <title> (id <doc id>): <text>``;
- the reply format the prompt asks for names the task: ``FACT:`` (read), ``SUBQUERY:`` (decide),
  otherwise ``ANSWER:`` (answer).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

Task = Literal["decide", "read", "answer", "unknown"]

NOT_FOUND = "NOT FOUND"

_QUESTION = re.compile(r"^Question:\s*(?P<q>.+?)\s*$", re.MULTILINE)
_SUB_QUESTION = re.compile(r"^Current sub-question:\s*(?P<q>.*?)\s*$", re.MULTILINE)
_SEARCHES = re.compile(r"Searches used:\s*(?P<used>\d+)\s+of\s+(?P<budget>\d+)")
_FACT_LINE = re.compile(r"^\s*(?P<n>\d+)\.\s+(?P<query>.*?)\s+->\s+(?P<answer>.*?)\s*$")
_NOTE_LINE = re.compile(r"^\s+note:\s*(?P<note>.+?)\s*$", re.IGNORECASE)
_DOC_LINE = re.compile(r"^\[(?P<rank>\d+)\]\s+(?P<title>.*?)\s+\(id\s+(?P<id>[^()\s]+)\):\s?(?P<text>.*)$")


@dataclass
class FactLine:
    """One search the agent already made, as the prompt reports it."""

    query: str
    answer: str | None
    notes: list[str] = field(default_factory=list)

    @property
    def found(self) -> bool:
        return self.answer is not None


@dataclass
class EvidenceDoc:
    rank: int
    id: str
    title: str
    text: str


@dataclass
class PromptView:
    """Everything the offline model takes from a prompt."""

    task: Task
    text: str
    question: str | None = None
    sub_question: str | None = None
    facts: list[FactLine] = field(default_factory=list)
    evidence: list[EvidenceDoc] = field(default_factory=list)
    searches_used: int | None = None
    budget: int | None = None

    @property
    def notes(self) -> list[str]:
        return [n for f in self.facts for n in f.notes]


def detect_task(text: str) -> Task:
    if "FACT:" in text:
        return "read"
    if "SUBQUERY:" in text:
        return "decide"
    if "ANSWER:" in text:
        return "answer"
    return "unknown"


def _block(text: str, header: str) -> list[str]:
    """Lines after the line starting with ``header`` up to the next blank line."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(header):
            out = []
            for following in lines[i + 1 :]:
                if not following.strip():
                    break
                out.append(following)
            return out
    return []


def parse_facts(text: str) -> list[FactLine]:
    facts: list[FactLine] = []
    for line in _block(text, "Facts found so far"):
        m = _FACT_LINE.match(line)
        if m:
            answer = m.group("answer").strip()
            facts.append(FactLine(m.group("query"), None if answer.upper() == NOT_FOUND else answer))
            continue
        note = _NOTE_LINE.match(line)
        if note and facts:
            facts[-1].notes.append(note.group("note"))
    return facts


def parse_evidence(text: str) -> list[EvidenceDoc]:
    docs = []
    for line in _block(text, "Evidence"):
        m = _DOC_LINE.match(line)
        if m:
            docs.append(EvidenceDoc(int(m.group("rank")), m.group("id"), m.group("title"), m.group("text")))
    return docs


def read_prompt(text: str) -> PromptView:
    view = PromptView(task=detect_task(text), text=text)
    if m := _QUESTION.search(text):
        view.question = m.group("q")
    if m := _SUB_QUESTION.search(text):
        view.sub_question = m.group("q")
    if m := _SEARCHES.search(text):
        view.searches_used, view.budget = int(m.group("used")), int(m.group("budget"))
    view.facts = parse_facts(text)
    view.evidence = parse_evidence(text)
    return view


# --- the dice's view of a prompt -----------------------------------------------------------
# The offline model's random draws are seeded by the prompt text (``offline_policy.Dice``), so
# rewording an agent's instructions would re-draw every simulated run. An agent that rewords a
# prompt (for a real model's sake) registers the new template with its first wording: a prompt
# that fills the new template is hashed as the first wording filled with the same values, and
# every offline draw, so every published offline figure, stays as it was.
_REWORDINGS: list[tuple[re.Pattern[str], str]] = []
_FIELD = re.compile(r"\{(\w+)\}")


def register_rewording(template: str, first_wording: str) -> None:
    """Hash prompts filling ``template`` as ``first_wording`` filled with the same fields."""
    if template == first_wording:
        return
    parts, names, last = [], [], 0
    for m in _FIELD.finditer(template):
        parts.append(re.escape(template[last : m.start()]))
        name = m.group(1)
        parts.append(f"(?P={name})" if name in names else f"(?P<{name}>.*?)")
        names.append(name)
        last = m.end()
    parts.append(re.escape(template[last:]))
    pattern = re.compile("".join(parts), re.DOTALL)
    if all(p.pattern != pattern.pattern for p, _ in _REWORDINGS):
        _REWORDINGS.append((pattern, first_wording))


def dice_text(text: str) -> str:
    """``text`` as the dice see it: in its first wording when it fills a reworded template."""
    for pattern, first in _REWORDINGS:
        m = pattern.fullmatch(text)
        if m:
            return first.format(**m.groupdict())
    return text
