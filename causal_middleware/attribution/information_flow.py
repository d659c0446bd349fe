"""Information-flow attribution for free-text (multi-agent) logs: where the wrong answer came from.

Offline and passive: it reads only the recorded messages (no model, no fork, no gold answer). The
steps are read in order as messages: an LLM step's output, a tool's output, a node's output, an
answer; a node step that holds other steps is not a message of its own (its children are). Three
rules, tried in order, each naming one step:

1. **Origin of the final claim.** The final message is the last non-tool message with some
   content (or the run's answer). Its claims are the numbers it states that the task did not give
   (the question, and the opening message when it restates the question; list numbering is not a
   claim); its key claims those of its last line that states one. Walking the messages in order,
   a claim is *introduced* by the first message that states it. The blamed step is the first
   message that introduces a key claim (else the one introducing most claims); when that message is
   a tool's output, the step that called the tool (its parent step, or in a flat log the nearest
   earlier non-tool message) is blamed: the code or query that produced the wrong value, or the
   message that stated a value no tool returned (an unsupported claim that propagated).
2. **First contradicted step.** Without a traceable claim: the first step whose tool call came
   back failed (an error, traceback or timeout in the tool's output, or an error status) is blamed,
   as the caller of that tool.
3. **First reply.** Else the reply to the opening message (its caller when it is a tool's output).

The rules name no agent, task or dataset string; they were designed on Who&When
Algorithm-Generated only (see the benchmark's report).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar

from causal_middleware.attribution.base import Diagnoser, Diagnosis, DiagnosisContext
from causal_middleware.attribution.text import coverage, terms
from causal_middleware.faults.model import Stage
from causal_middleware.spans.model import Status, Trajectory

__all__ = ["InformationFlowDiagnoser", "claim_numbers", "message_stage", "message_steps", "message_text"]

LIST_MARKER = re.compile(r"(?m)^\s*(?:[-*#>]+\s*)?(?:step\s*)?\d+[.):]\s", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?")
FAILURE_WORDS = re.compile(r"traceback|error|exception|failed|not found|timed? ?out", re.IGNORECASE)
_MESSAGE_KINDS = ("llm", "tool", "node", "answer")
_MIN_FINAL_TERMS = 3  # a final message states something ("TERMINATE", "ok" do not)
OPENING_COVERAGE = 0.5  # the opening message restates the question when it holds half its terms


def message_text(step: Any) -> str:
    """What a step said: an LLM's or tool's output, a node's output, an answer."""
    value = step.answer if step.kind == "answer" else getattr(step, "output", "")
    return value if isinstance(value, str) else "" if value is None else str(value)


def message_steps(trajectory: Trajectory) -> list[Any]:
    """The run's messages in order: steps with an output of their own (a node that holds other
    steps is not one: its children are)."""
    parents = {s.parent_step_id for s in trajectory.steps if s.parent_step_id}
    return [
        s
        for s in trajectory.steps
        if s.kind in _MESSAGE_KINDS
        and message_text(s).strip()
        and not (s.kind == "node" and s.step_id in parents)
    ]


def claim_numbers(text: str) -> set[str]:
    """The numbers ``text`` states, normalised (``1,000`` = ``1000``, ``2.50`` = ``2.5``), list
    numbering left out."""
    found: set[str] = set()
    for raw in _NUMBER.findall(LIST_MARKER.sub(" ", text or "")):
        value = raw.replace(",", "").strip(",")
        try:
            float(value)
        except ValueError:
            continue
        found.add(value.rstrip("0").rstrip(".") if "." in value else value)
    return found


class InformationFlowDiagnoser(Diagnoser):
    """Blames the step where the failed run's final claim entered the conversation."""

    name: ClassVar[str] = "information_flow"
    description: ClassVar[str] = (
        "offline, passive: the message that introduced the final answer's claims (the tool's "
        "caller for a tool output), else the first failed tool call, else the first reply"
    )

    def _diagnose(self, trajectory: Trajectory, context: DiagnosisContext) -> Diagnosis:
        messages = message_steps(trajectory)
        if not messages:
            return Diagnosis.not_run(self.name, "the run records no message to trace (no step output)")
        texts = [message_text(s) for s in messages]
        question = trajectory.input if isinstance(trajectory.input, str) else str(trajectory.input or "")
        given = claim_numbers(question)
        opening = 0 if coverage(terms(question), terms(texts[0])) >= OPENING_COVERAGE else None
        if opening is not None and question.strip():
            given |= claim_numbers(texts[0])
        found = self._claim_origin(messages, texts, given, trajectory.answer)
        rule, index = "claim_origin", None
        details: dict[str, Any] = {}
        if found is not None:
            index, details = found
        else:
            index = self._first_failed_call(messages, texts)
            rule = "first_failed_call"
            if index is None:
                index, rule = self._first_reply(messages), "first_reply"
        return message_diagnosis(
            self.name, messages, index, rule, _category(rule, details.get("introduced_at") == index), details
        )

    def _claim_origin(
        self, messages: Sequence[Any], texts: Sequence[str], given: set[str], answer: str | None
    ) -> tuple[int, dict[str, Any]] | None:
        final = answer if answer and answer.strip() else None
        if final is None:
            final = next(
                (
                    texts[i]
                    for i in range(len(messages) - 1, -1, -1)
                    if messages[i].kind != "tool" and len(terms(texts[i])) >= _MIN_FINAL_TERMS
                ),
                None,
            )
        if final is None:
            return None
        claims = claim_numbers(final) - given
        lines = [line for line in LIST_MARKER.sub(" ", final).splitlines() if claim_numbers(line) - given]
        key = claim_numbers(lines[-1]) - given if lines else set()
        seen = set(given)
        introduced: dict[int, set[str]] = {}
        for i, text in enumerate(texts):
            stated = claim_numbers(text) & claims
            if stated - seen:
                introduced[i] = stated - seen
            seen |= stated
        if not introduced:
            return None
        keyed = [i for i in introduced if introduced[i] & key]
        origin = min(keyed) if keyed else max(introduced, key=lambda i: (len(introduced[i]), -i))
        blamed = self._caller(messages, origin)
        return blamed, {
            "claims": sorted(claims),
            "key_claims": sorted(key),
            "introduced_at": origin,
            "introduced": sorted(introduced[origin]),
        }

    def _first_failed_call(self, messages: Sequence[Any], texts: Sequence[str]) -> int | None:
        for i, step in enumerate(messages):
            if step.kind == "tool" and (step.status == Status.ERROR or FAILURE_WORDS.search(texts[i])):
                return self._caller(messages, i)
        return None

    def _first_reply(self, messages: Sequence[Any]) -> int:
        """The reply to the opening message; when that reply is a tool's output, its caller."""
        return self._caller(messages, min(1, len(messages) - 1))

    @staticmethod
    def _caller(messages: Sequence[Any], index: int) -> int:
        """The step that called a tool message: its parent step when that is a message, else the
        nearest earlier non-tool message; a non-tool message is its own caller."""
        step = messages[index]
        if step.kind != "tool":
            return index
        positions = {s.step_id: i for i, s in enumerate(messages)}
        if step.parent_step_id in positions:
            return positions[step.parent_step_id]
        earlier = next((i for i in range(index - 1, -1, -1) if messages[i].kind != "tool"), None)
        return earlier if earlier is not None else index


def _category(rule: str, unsupported: bool) -> str | None:
    """The error category (TRAIL's taxonomy names) a rule's finding is evidence of: a claim no
    tool returned is a language-only error (a hallucination), a failed call a tool-related one."""
    if rule == "first_failed_call":
        return "Tool-related"
    if rule == "claim_origin" and unsupported:
        return "Language-only"
    return None


def message_diagnosis(
    method: str,
    messages: Sequence[Any],
    index: int,
    rule: str,
    category: str | None,
    details: dict[str, Any],
) -> Diagnosis:
    """The diagnosis that blames message ``index`` of ``messages`` by ``rule``."""
    step = messages[index]
    return Diagnosis(
        method=method,
        stage=message_stage(step.kind),
        hop=step.hop,
        step_id=step.step_id,
        node=step.node,
        root_cause=f"{rule}: step {index} of {len(messages)} messages ({step.name or step.kind})",
        details={"rule": rule, "message_index": index, "error_category": category, **details},
    )


def message_stage(kind: str) -> Stage:
    """The stage a message of this step kind stands for."""
    stages: dict[str, Stage] = {"tool": "tool", "answer": "answer", "retrieval": "retrieval"}
    return stages.get(kind, "planning")
