"""Decisive-step attribution for free-text multi-agent logs, short or long.

Offline and passive: it reads only the recorded messages (no model, no fork, no gold answer) and
extends :mod:`~causal_middleware.attribution.information_flow` to long logs where an orchestrating
agent routes work to acting agents and the run often ends without an answer. The messages are
those of information_flow; a message is *substantive* when it states at least four content terms
(a routing line such as "next speaker X" or "TERMINATE" is not). Four rules, tried in order, each
naming one step:

1. **Origin of the final claim.** The final message is the run's answer (when it states something
   the task did not), else the last substantive non-tool message. The run's answer, and a final
   message's answer line (``... answer ...: X``), is the claim itself: its number, or, for a text
   or list answer, its items' content terms the question does not hold; else (as in
   information_flow) the numbers the final message states that the task did not give, its key
   claims those of its last line stating one. A submission that says the run found nothing
   ("Unable to determine") is no claim. A line that submits the run's answer (``FINAL ANSWER: X``,
   printed into whichever message came last) is the conclusion, not evidence: no message is said
   to introduce the claim by it. A final message that opens by saying a budget ran out ("max
   rounds reached") and gives no answer line concludes nothing. The first message that introduces
   a key claim is the origin; for a text or list answer (``"A, B and C"``), the first one naming
   half of its items, each item whole (every term of it the task does not hold). A page an acting
   agent read (a tool output no code computed) introduces only what its head (the agent's own
   report, up front) states, or what its reader (the next substantive non-tool message) states
   too: a value deep in a page nobody took up is page content. A tool message's origin is blamed
   on the tool's caller only when the caller wrote code (a fenced block): the code computed the
   value. An acting agent given a natural-language request read the world and reported, so its own
   message is blamed. An answer no earlier message holds is blamed on the final message; for the
   run's answer on the last message when the submission is printed into it and it says more (the
   run ended there: a crashed call, a last report), else on the last substantive non-tool message,
   the agent that concluded (``unsupported``: a conclusion nothing supported).
2. **Onset of a loop.** Without a traceable claim: when an agent repeats a request of its own (the
   message that called a tool or acting agent, term overlap >= 0.8 with an earlier one), the run
   stopped making progress there; the first occurrence of the first repeated request is blamed
   (the request that did not get done).
3. **First failed call.** The first tool message whose head (its first 120 characters) reports a
   failure (an error, a traceback, a timeout, an error status), blamed on its caller; a failure
   word deep in a page of output is page content, not a failed call.
4. **First reply.** Else the first substantive reply to the opening message.

No rule names an agent, a task or a dataset; they were designed on Who&When Algorithm-Generated
and TRAIL (GAIA) and reported on Hand-Crafted (see docs/foreign-traces.md).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any, ClassVar

from causal_middleware.attribution.base import Diagnoser, Diagnosis, DiagnosisContext
from causal_middleware.attribution.information_flow import (
    FAILURE_WORDS,
    LIST_MARKER,
    OPENING_COVERAGE,
    claim_numbers,
    message_diagnosis,
    message_steps,
    message_text,
)
from causal_middleware.attribution.text import coverage, terms
from causal_middleware.spans.model import Status, Trajectory

__all__ = ["DecisiveStepDiagnoser", "answer_line"]

# "Final answer: X", not code (``answer = f(x)``) nor a data field (``"answer": false``)
_ANSWER_LINE = re.compile(r"(?im)^[^\n=()]{0,40}(?<![\"'])\banswer\b(?![\"'])[^\n:=()]{0,30}:\s*(\S[^\n]*)$")
# a run's closing notice that a budget ran out, as its first line ("max rounds reached")
_BUDGET = re.compile(r"(?i)\A\s*(?:max(?:imum)?|limit)\b[^\n]{0,40}\b(?:reached|exceeded)\b")
_CODE = "```"
_MIN_TERMS = 4  # a substantive message states something ("next speaker X", "TERMINATE" do not)
_REPEAT_OVERLAP = 0.8  # two messages of one agent are the same request at this term overlap
_HEAD_CHARS = 120  # a tool reports its own failure up front; later failure words are page content
_TEXT_CLAIM = 0.5  # a message holds a text answer when it has half of its items
# a submission that says the run found nothing ("Unable to determine") states no claim
_NON_ANSWER = re.compile(
    r"(?i)\A\W*(?:i\s+)?(?:(?:am|was|is|are)\s+)?(?:unable|cannot|can't|could\s*n[o']?t|not\s+"
    r"(?:able|possible|available|found|known|determin\w*)|unknown|none|n/?a|no\s+(?:answer|result|data|"
    r"information|match\w*))\b"
)
# the items of a list answer ("A, B and C")
_ITEMS = re.compile(r"\s*(?:[,;\n]|\band\b|&)\s*")


def answer_line(text: str) -> str | None:
    """What the last ``... answer ...: X`` line of ``text`` states (``X``), or None."""
    found = _ANSWER_LINE.findall(text or "")
    return found[-1].strip() if found else None


class DecisiveStepDiagnoser(Diagnoser):
    """Blames the step where the failed run's final claim entered, or where it stopped progressing."""

    name: ClassVar[str] = "decisive_step"
    description: ClassVar[str] = (
        "offline, passive: the message that introduced the final claim (an acting agent's own "
        "report, a code tool's caller), else the onset of a loop, else the first failed call, "
        "else the first reply"
    )

    def _diagnose(self, trajectory: Trajectory, context: DiagnosisContext) -> Diagnosis:
        messages = message_steps(trajectory)
        if not messages:
            return Diagnosis.not_run(self.name, "the run records no message to trace (no step output)")
        log = _Log(messages, trajectory.input, trajectory.answer)
        found = log.claim_origin()
        details: dict[str, Any] = {}
        if found is not None:
            index, details = found
            rule = "claim_origin"
        else:
            loop = log.loop_onset()
            failed = log.first_failed_call() if loop is None else None
            if loop is not None:
                index, rule = loop, "loop_onset"
            elif failed is not None:
                index, rule = failed, "first_failed_call"
            else:
                index, rule = log.first_reply(), "first_reply"
        return message_diagnosis(
            self.name, messages, index, rule, _category(rule, messages, details.get("introduced_at")), details
        )


class _Log:
    """One run's messages with what the rules read from them."""

    def __init__(self, messages: Sequence[Any], question: object, answer: str | None) -> None:
        self.messages = messages
        self.texts = [message_text(s) for s in messages]
        self.terms = [terms(t) for t in self.texts]
        self.question = question if isinstance(question, str) else str(question or "")
        self.given = claim_numbers(self.question)
        self.given_terms = terms(self.question)
        if self.question.strip() and coverage(self.given_terms, self.terms[0]) >= OPENING_COVERAGE:
            self.given |= claim_numbers(self.texts[0])
            self.given_terms |= self.terms[0]
        # an "answer" that states nothing beyond the task (a log whose only output is the task's
        # own message) is no answer
        stated = (
            answer is not None
            and not _NON_ANSWER.search(answer)
            and bool(terms(answer) - self.given_terms or claim_numbers(answer) - self.given)
        )
        self.answer = answer if stated else None
        # what each message says as evidence: a line submitting the run's answer ("FINAL ANSWER:
        # X", printed into whichever message came last) is the run's conclusion, not a message
        # that introduced the claim
        self.evidence = [_without_submission(t, self.answer) for t in self.texts]
        self.evidence_terms = [terms(t) for t in self.evidence]

    def substantive(self, i: int) -> bool:
        return len(self.terms[i]) >= _MIN_TERMS

    def final(self) -> tuple[int, str] | None:
        """The final message: (its index, its text); the run's answer counts as the last one."""
        if self.answer is not None:
            return len(self.messages), self.answer
        for i in range(len(self.messages) - 1, -1, -1):
            if self.messages[i].kind != "tool" and self.substantive(i):
                return i, self.texts[i]
        return None

    def claim_origin(self) -> tuple[int, dict[str, Any]] | None:
        final = self.final()
        if final is None:
            return None
        end, text = final
        # the run's own answer is what it submitted: the claim itself, as an answer line states it
        stated = answer_line(text) or (text.strip() if end == len(self.messages) else None)
        if stated is not None:
            if _NON_ANSWER.search(stated):
                return None  # the run concluded it found nothing: no claim to trace
            numbers = claim_numbers(stated) - self.given
            if numbers and _is_number(stated):
                return self._number_origin(end, numbers, numbers)
            return self._text_origin(end, self._items(stated))
        if _BUDGET.search(text):
            return None  # stopped by a budget, not by a conclusion: there is no final claim
        claims = claim_numbers(text) - self.given
        lines = [ln for ln in LIST_MARKER.sub(" ", text).splitlines() if claim_numbers(ln) - self.given]
        key = claim_numbers(lines[-1]) - self.given if lines else set()
        return self._number_origin(end, claims, key)

    def _number_origin(self, end: int, claims: set[str], key: set[str]) -> tuple[int, dict[str, Any]] | None:
        seen = set(self.given)
        introduced: dict[int, set[str]] = {}
        for i in range(min(end + 1, len(self.texts))):
            stated = self._taken_up(i, end, claim_numbers(self.evidence[i]) & claims)
            if stated - seen:
                introduced[i] = stated - seen
            seen |= stated
        if not introduced:
            return self._unsupported(end, claims)
        keyed = [i for i in introduced if introduced[i] & key]
        origin = min(keyed) if keyed else max(introduced, key=lambda i: (len(introduced[i]), -i))
        return self._blame(origin), {
            "claims": sorted(claims),
            "key_claims": sorted(key),
            "introduced_at": origin,
            "introduced": sorted(introduced[origin]),
            "unsupported": origin == end,  # the conclusion itself introduced it
        }

    def _taken_up(self, index: int, end: int, numbers: set[str]) -> set[str]:
        """The ``numbers`` message ``index`` is the evidence for (see :meth:`_reader`)."""
        reader = self._reader(index, end) if numbers else None
        if reader is None:
            return numbers
        head = claim_numbers(self.evidence[index].strip()[:_HEAD_CHARS])
        return numbers & (head | claim_numbers(self.evidence[reader]))

    def _reader(self, index: int, end: int) -> int | None:
        """For a page an acting agent read (a tool output no code computed), the message that
        read it: the next substantive non-tool message. Such an output is evidence of what its
        head (the agent's own report, up front) states, and of the rest only what its reader
        states too: a value deep in a page nobody took up is page content, not where the claim
        came from. None for code output and every other message (evidence of all they state), and
        for a page the run's answer directly follows."""
        if self.messages[index].kind != "tool" or self._blame(index) != index:
            return None
        return next(
            (
                j
                for j in range(index + 1, min(end + 1, len(self.texts)))
                if self.messages[j].kind != "tool" and len(self.evidence_terms[j]) >= _MIN_TERMS
            ),
            None,
        )

    def _items(self, stated: str) -> list[set[str]]:
        """The items a text (or multi-number) answer names, each as the terms the task does not
        hold: ``"A, B and C"`` names three, ``"Casino Royale"`` one of two terms."""
        items = [terms(part) - self.given_terms for part in _ITEMS.split(stated)]
        return [item for item in items if item]

    def _text_origin(self, end: int, items: list[set[str]]) -> tuple[int, dict[str, Any]] | None:
        """The first message naming half of the answer's items, each item whole (every one of its
        terms): a name is introduced where all of it is, not where one common word of it is."""
        if not items:
            return None
        claim = set().union(*items)
        needed = max(1, math.ceil(_TEXT_CLAIM * len(items)))
        for i in range(min(end + 1, len(self.texts))):
            reader = self._reader(i, end)
            named = [item for item in items if item <= self.evidence_terms[i]]
            if reader is not None:
                head = terms(self.evidence[i].strip()[:_HEAD_CHARS])
                named = [item for item in named if item <= head or item <= self.evidence_terms[reader]]
            if len(named) >= needed:
                return self._blame(i), {"claims": sorted(claim), "introduced_at": i, "unsupported": i == end}
        return self._unsupported(end, claim)

    def _unsupported(self, end: int, claims: set[str]) -> tuple[int, dict[str, Any]] | None:
        """A submitted answer no message supports is the conclusion's own: blamed on the last
        message when the submission is printed into it and it says more than the submission
        (the run ended there: a crashed call, a last report), else on the last substantive
        non-tool message (the agent that concluded)."""
        if end < len(self.messages):
            return None
        last = len(self.messages) - 1
        conclusion: int | None = last
        if self.evidence[last] == self.texts[last] or len(self.evidence_terms[last]) < _MIN_TERMS:
            conclusion = next(
                (
                    i
                    for i in range(last, -1, -1)
                    if self.messages[i].kind != "tool" and len(self.evidence_terms[i]) >= _MIN_TERMS
                ),
                None,
            )
        if conclusion is None:
            return None
        return conclusion, {"claims": sorted(claims), "introduced_at": conclusion, "unsupported": True}

    def _blame(self, index: int) -> int:
        """Who is responsible for what message ``index`` stated: itself, or for a tool's output
        computed by code, the caller that wrote the code."""
        if self.messages[index].kind != "tool":
            return index
        caller = self.caller(index)
        return caller if caller is not None and _CODE in self.texts[caller] else index

    def caller(self, index: int) -> int | None:
        """The message that called tool message ``index``: its parent step, else the nearest
        earlier substantive non-tool message."""
        step = self.messages[index]
        positions = {s.step_id: i for i, s in enumerate(self.messages)}
        if step.parent_step_id in positions:
            return positions[step.parent_step_id]
        return next(
            (i for i in range(index - 1, -1, -1) if self.messages[i].kind != "tool" and self.substantive(i)),
            None,
        )

    def loop_onset(self) -> int | None:
        """The first occurrence of the first request (a tool's caller) its agent later repeats."""
        requests = sorted(
            {c for i, s in enumerate(self.messages) if s.kind == "tool" and (c := self.caller(i)) is not None}
        )
        for later, j in enumerate(requests):
            for i in requests[:later]:
                if self.messages[i].node == self.messages[j].node and _overlap(self.terms[i], self.terms[j]):
                    return i
        return None

    def first_failed_call(self) -> int | None:
        for i, step in enumerate(self.messages):
            head = self.texts[i].strip()[:_HEAD_CHARS]
            if step.kind == "tool" and (step.status == Status.ERROR or FAILURE_WORDS.search(head)):
                caller = self.caller(i)
                return caller if caller is not None else i
        return None

    def first_reply(self) -> int:
        """The first substantive message after the opening one (its caller for a tool's output)."""
        reply = next((i for i in range(1, len(self.messages)) if self.substantive(i)), None)
        if reply is None:
            return min(1, len(self.messages) - 1)
        if self.messages[reply].kind == "tool":
            caller = self.caller(reply)
            return caller if caller is not None else reply
        return reply


def _is_number(text: str) -> bool:
    """Whether ``text`` states one number and nothing else (``"1,080"``, ``"-3.5"``)."""
    return len(claim_numbers(text)) == 1 and not terms(re.sub(r"[\d.,\s+-]", " ", text))


def _without_submission(text: str, answer: str | None) -> str:
    """``text`` without the lines that submit ``answer`` (``... answer ...: <answer>``)."""
    if answer is None:
        return text
    submitted = answer.strip()
    return "\n".join(line for line in text.splitlines() if answer_line(line) != submitted)


def _category(rule: str, messages: Sequence[Any], introduced_at: int | None) -> str | None:
    """The error category (TRAIL's taxonomy names, as information_flow maps them) a finding is
    evidence of: a claim a model stated with no tool returning it is language-only (a
    hallucination), a failed call tool-related."""
    if rule == "first_failed_call":
        return "Tool-related"
    if rule == "claim_origin" and introduced_at is not None and messages[introduced_at].kind != "tool":
        return "Language-only"
    return None


def _overlap(a: set[str], b: set[str]) -> bool:
    """Whether two term sets are the same message said again (Jaccard >= the repeat overlap)."""
    union = a | b
    return bool(union) and len(a & b) / len(union) >= _REPEAT_OVERLAP
