"""A Who&When Hand-Crafted (Magentic-One) log's answer is the one it submitted, never the human's
question, and importing it keeps step ``i`` = ``history[i]`` (the labels index the history)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from causal_middleware.spans.builder import build_trajectory
from causal_middleware.store.base import SpanStore
from causal_middleware.store.whowhen import final_answer, import_whowhen, read_whowhen

QUESTION = "How many moons of Saturn were discovered in 2019? Answer with a number."
TRAILER = (
    "No agent selected.\n  response = await client.create(messages)\n"
    "FINAL ANSWER: 20\nSCENARIO.PY COMPLETE !#!#\nRUN.SH COMPLETE !#!#"
)


def _history(last: str) -> list[dict[str, Any]]:
    return [
        {"content": QUESTION + "\n", "role": "human"},
        {
            "content": "Initial plan: ask WebSurfer to search for Saturn's moons found in 2019.",
            "role": "Orchestrator (thought)",
        },
        {"content": "Search for moons of Saturn discovered in 2019.", "role": "Orchestrator (-> WebSurfer)"},
        {
            "content": "I typed 'Saturn moons 2019' into the search bar. The page says 20 new moons.",
            "role": "WebSurfer",
        },
        {
            "content": "Final answer: the page lists twenty moons, so we are done.",
            "role": "Orchestrator (thought)",
        },
        {"content": last, "role": "Orchestrator (termination condition)"},
    ]


def _log(tmp_path: Path, history: list[dict[str, Any]], name: str = "7.json") -> Path:
    folder = tmp_path / "Hand-Crafted"
    folder.mkdir(exist_ok=True)
    file = folder / name
    file.write_text(
        json.dumps(
            {
                "question": QUESTION,
                "ground_truth": "20",
                "history": history,
                "mistake_agent": "WebSurfer",
                "mistake_step": "3",
                "mistake_reason": "misread the page",
                "question_ID": "q7",
            }
        )
    )
    return file


def test_the_answer_is_the_final_answer_line_and_every_message_keeps_its_index(tmp_path: Path) -> None:
    history = _history(TRAILER)
    t = build_trajectory(read_whowhen(_log(tmp_path, history)))
    assert t.answer == "20"
    assert len(t.steps) == len(history)
    assert [s.node for s in t.steps] == [
        "human",
        "Orchestrator",
        "Orchestrator",
        "WebSurfer",
        "Orchestrator",
        "Orchestrator",
    ]
    assert t.steps[0].kind == "node" and t.steps[0].output == history[0]["content"]  # type: ignore[union-attr]
    assert t.steps[3].kind == "tool" and t.steps[3].output == history[3]["content"]  # type: ignore[union-attr]
    assert t.labels["whowhen.mistake_step"] == 3 and t.steps[3].node == t.labels["whowhen.mistake_agent"]
    assert t.input == QUESTION


def test_a_log_with_no_final_answer_line_has_no_answer_not_the_question(tmp_path: Path) -> None:
    history = _history("Max rounds (30) reached.\n  response = await client.create(messages)")
    t = build_trajectory(read_whowhen(_log(tmp_path, history)))
    assert not t.answer  # "Final answer: ..." in an agent's prose is a message, not the submission
    assert len(t.steps) == len(history) and t.steps[0].node == "human"


def test_the_store_summary_gives_the_same_answer(tmp_path: Path, store: SpanStore) -> None:
    _log(tmp_path, _history(TRAILER), "1.json")
    _log(tmp_path, _history("Max time (1500s) reached."), "2.json")
    first, second = import_whowhen(store, tmp_path / "Hand-Crafted")
    answers = {r.run_id: r.answer for r in store.list_runs(limit=None)}
    assert answers[first] == "20" and not answers[second]
    assert QUESTION not in {answers[first], answers[second]}


def test_final_answer_takes_the_last_submission_line() -> None:
    assert (
        final_answer([{"content": "FINAL ANSWER: 3"}, {"content": "x\n  FINAL ANSWER:  Ethan Zohn \nRUN.SH"}])
        == "Ethan Zohn"
    )
    assert final_answer([{"content": "FINAL ANSWER: 3"}, {"content": "no submission here"}]) == "3"
    assert final_answer([{"content": "Final answer: 3"}, {"content": ["FINAL ANSWER: 4"]}]) == ""
    assert final_answer([{"content": "FINAL ANSWER:\n"}]) == ""
