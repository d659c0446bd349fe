"""Import Who&When failure-attribution logs (ag2ai/Agents_Failure_Attribution).

A Who&When file is one failed multi-agent run: ``question``, ``ground_truth``, ``history`` (the
chat, a list of ``{content, role, name?}``), ``mistake_agent``, ``mistake_step`` (an index into
``history``, as a string) and ``mistake_reason``. The two subsets differ: in
*Algorithm-Generated* (AutoGen group chats) the agent is ``name`` and ``role`` is
``assistant``/``user``; in *Hand-Crafted* (Magentic-One) there is no ``name`` and ``role`` holds the
agent, with what it did in parentheses (``Orchestrator (-> WebSurfer)``; the agent is
``Orchestrator``).

Each message becomes one step, in order (step ``i`` is ``history[i]``), named after its agent and
carrying it as ``causal.node`` (``Step.node`` is the agent) and ``agent.name`` (so a diagnosis
names the agent, :mod:`causal_middleware.attribution.targets`):

* messages of agents that act on the environment (a name containing ``terminal`` or ``surfer``:
  ``Computer_terminal``, ``WebSurfer``, ``FileSurfer``, ``ComputerTerminal``) are tool steps, the
  message the tool's output, so each starts a hop as tool calls do in agents without retrievers;
* the human's message (Hand-Crafted ``human``) is a node step; every other message an LLM step
  whose output is the message.

The run's root holds the question (``input.value``), the run's final answer (``output.value``: what
the last ``FINAL ANSWER: X`` line of the log states, the line with which a Magentic-One/GAIA run
submits its answer; empty when the log has none: an agent saying "final answer" in prose is a
message, not the run's output, and without a root output the builder would take the human's
message, the outermost node, for the answer), ``ground_truth`` as the reference, outcome
``failure`` (every log is a failed run) and the ground truth of the attribution as labels:
``whowhen.mistake_agent``, ``whowhen.mistake_step`` (an int), ``whowhen.mistake_reason``,
``whowhen.subset``, ``whowhen.question_id``, ``whowhen.file``. Ids are derived from the file's
subset, name and question id, so importing a file twice gives the same run.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from causal_middleware.spans import attributes as A
from causal_middleware.spans.record import SpanRecord
from causal_middleware.store.base import SpanStore, StoreError

__all__ = [
    "LABEL_MISTAKE_AGENT",
    "LABEL_MISTAKE_STEP",
    "LABEL_SUBSET",
    "final_answer",
    "import_whowhen",
    "message_agent",
    "read_whowhen",
    "whowhen_files",
]

AGENT_NAME = "agent.name"  # OpenInference's agent attribute: the step's agent
LABEL_MISTAKE_AGENT = "whowhen.mistake_agent"
LABEL_MISTAKE_STEP = "whowhen.mistake_step"
LABEL_SUBSET = "whowhen.subset"
SUBSETS = ("Algorithm-Generated", "Hand-Crafted")
_TOOL_AGENT = re.compile(r"terminal|surfer", re.IGNORECASE)
_HUMAN = {"human", "user"}
_FINAL_ANSWER = re.compile(r"(?m)^[ \t]*FINAL ANSWER:[ \t]*(\S[^\n]*?)[ \t]*$")
_BASE_NS = 1_700_000_000_000_000_000
_STEP_NS = 1_000_000


def message_agent(message: Mapping[str, Any]) -> str:
    """The agent of one history message: ``name`` when present, else ``role`` without what is in
    parentheses (``Orchestrator (thought)`` -> ``Orchestrator``)."""
    name = message.get("name")
    if isinstance(name, str) and name.strip():
        return name.strip()
    role = message.get("role")
    return re.sub(r"\s*\(.*\)\s*$", "", role).strip() if isinstance(role, str) and role.strip() else "unknown"


def final_answer(history: Sequence[Mapping[str, Any]]) -> str:
    """The answer the run submitted: what the last ``FINAL ANSWER: X`` line of the log states;
    empty when no message has one."""
    for message in reversed(history):
        content = message.get("content")
        found = _FINAL_ANSWER.findall(content) if isinstance(content, str) else []
        if found:
            return str(found[-1]).strip()
    return ""


def _subset(path: Path, data: Mapping[str, Any]) -> str:
    for part in reversed(path.resolve().parts[:-1]):
        if part in SUBSETS:
            return part
    history = data.get("history") or []
    return (
        "Algorithm-Generated" if any(isinstance(m, dict) and "name" in m for m in history) else "Hand-Crafted"
    )


def _hex(seed: str, digits: int) -> str:
    value = hashlib.sha256(seed.encode()).hexdigest()[:digits]
    return value if set(value) != {"0"} else "1" + value[1:]


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise StoreError(f"{path} is not a Who&When log: not UTF-8 text ({exc})") from None
    except json.JSONDecodeError as exc:
        raise StoreError(f"{path} is not a Who&When log: malformed JSON ({exc})") from None
    if not isinstance(data, dict):
        raise StoreError(f"{path} is not a Who&When log: expected an object, got {type(data).__name__}")
    missing = [k for k in ("question", "history", "mistake_agent", "mistake_step") if k not in data]
    if missing:
        raise StoreError(f"{path} is not a Who&When log: no {', '.join(missing)}")
    history = data["history"]
    if not isinstance(history, list) or not all(isinstance(m, dict) for m in history):
        raise StoreError(f"{path} is not a Who&When log: 'history' must be a list of messages")
    try:
        step = int(str(data["mistake_step"]).strip())
    except ValueError:
        raise StoreError(
            f"{path} is not a Who&When log: mistake_step {data['mistake_step']!r} is not an integer"
        ) from None
    if not 0 <= step < max(len(history), 1):
        raise StoreError(f"{path}: mistake_step {step} is outside the history of {len(history)} messages")
    data["mistake_step"] = step
    return data


def read_whowhen(path: str | os.PathLike[str]) -> list[SpanRecord]:
    """One Who&When log as the spans of one run (see the module docstring); StoreError naming the
    file when it is not a Who&When log."""
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"Who&When file not found: {file}")
    data = _load(file)
    subset = _subset(file, data)
    seed = f"whowhen:{subset}:{file.name}:{data.get('question_ID', '')}"
    trace_id = _hex(seed, 32)
    root_id = _hex(seed + ":root", 16)
    history: list[dict[str, Any]] = data["history"]
    end_ns = _BASE_NS + (len(history) + 1) * _STEP_NS
    labels = {
        LABEL_SUBSET: subset,
        LABEL_MISTAKE_AGENT: str(data["mistake_agent"]),
        LABEL_MISTAKE_STEP: data["mistake_step"],
        "whowhen.mistake_reason": str(data.get("mistake_reason") or ""),
        "whowhen.question_id": str(data.get("question_ID") or ""),
        "whowhen.file": file.name,
    }
    root_attrs: dict[str, Any] = {
        A.OPENINFERENCE_SPAN_KIND: "CHAIN",
        A.INPUT_VALUE: str(data["question"]),
        A.INPUT_MIME_TYPE: "text/plain",
        A.OUTPUT_VALUE: final_answer(history),
        A.OUTPUT_MIME_TYPE: "text/plain",
        A.CAUSAL_RUN_OUTCOME: "failure",
        A.CAUSAL_RUN_LABELS: json.dumps(labels, ensure_ascii=False),
    }
    if data.get("ground_truth") is not None:
        reference = str(data["ground_truth"])
        root_attrs[A.CAUSAL_RUN_REFERENCE] = json.dumps(reference, ensure_ascii=False)
    records = [
        SpanRecord(
            trace_id=trace_id,
            span_id=root_id,
            name=f"who_and_when:{subset}",
            start_time_ns=_BASE_NS,
            end_time_ns=end_ns,
            status_code="ERROR",
            status_message="the run failed (Who&When)",
            attributes=root_attrs,
            scope="causal_middleware.store.whowhen",
        )
    ]
    for index, message in enumerate(history):
        agent = message_agent(message)
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, default=str)
        attrs: dict[str, Any] = {A.CAUSAL_NODE: agent, AGENT_NAME: agent}
        role = message.get("role")
        if isinstance(role, str):
            attrs["whowhen.role"] = role
        if agent.lower() in _HUMAN and "name" not in message:
            attrs[A.OPENINFERENCE_SPAN_KIND] = "CHAIN"
            attrs[A.OUTPUT_VALUE] = text
            attrs[A.OUTPUT_MIME_TYPE] = "text/plain"
        elif _TOOL_AGENT.search(agent):
            attrs[A.OPENINFERENCE_SPAN_KIND] = "TOOL"
            attrs[A.TOOL_NAME] = agent
            attrs[A.OUTPUT_VALUE] = text
            attrs[A.OUTPUT_MIME_TYPE] = "text/plain"
        else:
            attrs[A.OPENINFERENCE_SPAN_KIND] = "LLM"
            attrs["llm.output_messages.0.message.role"] = "assistant"
            attrs["llm.output_messages.0.message.content"] = text
        start = _BASE_NS + (index + 1) * _STEP_NS
        records.append(
            SpanRecord(
                trace_id=trace_id,
                span_id=_hex(f"{seed}:step:{index}", 16),
                parent_span_id=root_id,
                name=agent,
                start_time_ns=start,
                end_time_ns=start + _STEP_NS // 2,
                status_code="OK",
                attributes=attrs,
                scope="causal_middleware.store.whowhen",
            )
        )
    return records


def whowhen_files(path: str | os.PathLike[str]) -> list[Path]:
    """``path`` itself when it is a file; the ``*.json`` files of a folder in numeric order."""
    target = Path(path)
    if target.is_file():
        return [target]
    if not target.is_dir():
        raise FileNotFoundError(f"Who&When file or folder not found: {target}")
    files = sorted(
        target.glob("*.json"),
        key=lambda p: (not p.stem.isdigit(), int(p.stem) if p.stem.isdigit() else 0, p.name),
    )
    if not files:
        raise StoreError(f"{target} holds no Who&When logs (*.json)")
    return files


def import_whowhen(store: SpanStore, path: str | os.PathLike[str]) -> list[str]:
    """Load one Who&When log, or every log of a folder (a subset), into ``store``; returns the
    run ids in file order. Every file is read and checked before anything is written."""
    batches = [read_whowhen(file) for file in whowhen_files(path)]
    for records in batches:
        store.write_spans(records)
    return [records[0].trace_id for records in batches]
