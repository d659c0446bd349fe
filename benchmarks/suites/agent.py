"""Agent accuracy benchmark: how often the agent answers correctly, by hop count and retriever.

:func:`run_agent_accuracy_bench` runs every question of a dataset once per retriever on an agent
built by the ``make_agent(dataset, retriever)`` factory it is given (the core never builds a
LangGraph agent; ``causal-mw bench agent`` passes the reference agent over the default generated
world) and scores the answers with :func:`~causal_middleware.tasks.scoring.is_correct`.

Result keys: ``dataset`` (name, questions, passages, hop counts), ``retrievers.<name>``:
``status`` (``ok`` or ``skipped`` with a ``reason`` when the retriever cannot be built here, e.g.
dense without the ``[dense]`` extra), ``n``, ``correct``, ``accuracy``, ``ci`` (bootstrap 95%),
``mean_searches``, ``elapsed_s`` and ``by_hops.<h>`` (``n``, ``correct``, ``accuracy``, ``ci``).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from causal_middleware.evaluation.stats import bootstrap_ci
from causal_middleware.tasks.model import Dataset, Question
from causal_middleware.tasks.scoring import is_correct

__all__ = ["AgentAnswer", "AgentFactory", "format_agent_table", "run_agent_accuracy_bench"]


class AgentAnswer(NamedTuple):
    """What one question's run gave: the final answer and how many searches it made."""

    answer: str | None
    searches: int = 0


AgentFactory = Callable[[Dataset, str], Callable[[Question], AgentAnswer]]


def _cell(flags: Sequence[bool], B: int, seed: int) -> dict[str, Any]:
    ci = bootstrap_ci([float(f) for f in flags], B=B, seed=seed) if flags else None
    return {
        "n": len(flags),
        "correct": sum(flags),
        "accuracy": round(sum(flags) / len(flags), 4) if flags else None,
        "ci": [round(ci[0], 4), round(ci[1], 4)] if ci is not None else None,
    }


def run_agent_accuracy_bench(
    make_agent: AgentFactory,
    dataset: Dataset,
    *,
    retrievers: Sequence[str] = ("bm25", "dense"),
    B: int = 1000,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Accuracy of the agent ``make_agent`` builds, per retriever and hop count (module docstring).

    ``make_agent(dataset, retriever)`` returns a function answering one question; an ImportError
    from it (a retriever whose extra is not installed) marks that retriever ``skipped``.
    """
    if not dataset.questions:
        raise ValueError(f"dataset {dataset.name!r} has no questions")
    if not retrievers:
        raise ValueError("retrievers is empty; name at least one, e.g. ['bm25']")
    if B < 1:
        raise ValueError(f"B must be at least 1, got {B}")
    say = progress or (lambda _msg: None)
    hop_counts: dict[str, int] = defaultdict(int)
    for q in dataset.questions:
        hop_counts[str(q.n_hops)] += 1
    out: dict[str, Any] = {
        "dataset": {
            "name": dataset.name,
            "seed": dataset.seed,
            "n_questions": len(dataset.questions),
            "n_passages": len(dataset.passages),
            "hop_counts": dict(sorted(hop_counts.items())),
        },
        "retrievers": {},
    }
    for name in retrievers:
        started = time.perf_counter()
        try:
            answer = make_agent(dataset, name)
        except ImportError as exc:
            out["retrievers"][name] = {"status": "skipped", "reason": str(exc)}
            say(f"{name}: skipped ({exc})")
            continue
        by_hops: dict[int, list[bool]] = defaultdict(list)
        flags: list[bool] = []
        searches = 0
        for i, question in enumerate(dataset.questions, start=1):
            result = answer(question)
            correct = is_correct(result.answer, question)
            flags.append(correct)
            by_hops[question.n_hops].append(correct)
            searches += result.searches
            if i % 20 == 0 or i == len(dataset.questions):
                say(f"{name}: {i}/{len(dataset.questions)} questions, {sum(flags)} correct")
        out["retrievers"][name] = {
            "status": "ok",
            **_cell(flags, B, seed),
            "mean_searches": round(searches / len(flags), 3),
            "by_hops": {str(h): _cell(v, B, seed) for h, v in sorted(by_hops.items())},
            "elapsed_s": round(time.perf_counter() - started, 2),
        }
    return out


def format_agent_table(results: dict[str, Any]) -> str:
    """A markdown table: accuracy (correct/n) per hop count and overall, per retriever."""
    rows = results.get("retrievers", {})
    hops = sorted({int(h) for r in rows.values() for h in r.get("by_hops", {})})
    lines = [
        "| retriever | " + " | ".join(f"{h}-hop" for h in hops) + " | all | searches/question |",
        "|---|" + "---|" * (len(hops) + 2),
    ]
    for name, r in rows.items():
        if r["status"] != "ok":
            lines.append(f"| {name} | " + " | ".join("-" for _ in hops) + f" | skipped: {r['reason']} | - |")
            continue
        cells = []
        for h in hops:
            c = r["by_hops"].get(str(h))
            cells.append(f"{c['accuracy']:.2f} ({c['correct']}/{c['n']})" if c else "-")
        lines.append(
            f"| {name} | "
            + " | ".join(cells)
            + f" | {r['accuracy']:.2f} ({r['correct']}/{r['n']}) | {r['mean_searches']:.2f} |"
        )
    return "\n".join(lines)
