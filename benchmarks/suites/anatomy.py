"""Where the agent's own (natural) failures left the gold path: a passive profile, no re-execution.

For each base run that answered wrong with no fault injected, and a question with a gold
decomposition: the first hop, in run order, whose reading does not state its gold hop answer
(aligned as the hop repair aligns it), and at that hop

* ``gold_in_evidence``: its retrieved passages state the gold hop answer (the reading went wrong)
  or not (the search did);
* ``after_sentence``: the hop before it read its gold answer amid other words (a reader that
  copies the whole answering sentence) and this hop's sub-query carries those words (the plan
  filled the sentence in as the bridge).

A run whose hops read every gold hop's answer failed at the answer step (``answer``); one that
read right as far as it went but stopped before some gold hop is ``incomplete``. Hops are the
run's, in run order, and a retried hop counts at its first attempt that read wrong. The profile
says which repairs can work at all: a reading repair needs the gold in the evidence, a search
repair needs the gold in the index, and a hop searched with a sentence needs the hop before it cut
to its value first (``bench fp``'s ``base.anatomy``; docs/local-model.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from causal_middleware.attribution.hops import HopView, hop_views
from causal_middleware.attribution.repair_op import gold_reading, reads_gold
from causal_middleware.faults.sweep import BASE_LABEL, base_key
from causal_middleware.spans.model import Outcome
from causal_middleware.store.base import SpanStore
from causal_middleware.tasks.model import Question
from causal_middleware.tasks.scoring import contains_answer
from causal_middleware.text import content_words

__all__ = ["failure_anatomy", "left_gold_path", "stored_base_failures"]

SENTENCE_EXTRA_WORDS = 2  # content words beyond the gold value that make a reading a sentence


def _value_line(fact: str) -> str:
    """The reading without a ``Fact:`` label and past its first line (readers repeat themselves)."""
    line = next((ln for ln in fact.splitlines() if ln.strip()), "")
    head, sep, rest = line.partition(":")
    if sep and head.strip().lower() in {"fact", "answer"}:
        line = rest
    return line.strip()


def left_gold_path(views: Sequence[HopView], question: Question) -> dict[str, object]:
    """One failure's row: ``hop`` (None: no hop read wrong), ``gold_in_evidence``,
    ``after_sentence``; with ``hop`` None also ``complete`` (every gold hop was read right)."""
    previous: HopView | None = None
    read: set[int] = set()
    for view in views:
        gold = gold_reading(view, question)
        if gold is None:
            break
        if not reads_gold(view, gold):
            return {
                "hop": view.index,
                "gold_in_evidence": contains_answer(view.evidence, gold.answer, gold.aliases),
                "after_sentence": previous is not None and _sentence_bridge(previous, view, question),
            }
        read.add(gold.index)
        previous = view
    complete = bool(question.hops) and read >= {h.index for h in question.hops}
    return {"hop": None, "gold_in_evidence": None, "after_sentence": None, "complete": complete}


def _sentence_bridge(previous: HopView, view: HopView, question: Question) -> bool:
    gold = gold_reading(previous, question)
    if gold is None:
        return False
    line = _value_line(previous.fact)
    extra = (
        content_words(line) - content_words(gold.answer) - {a for x in gold.aliases for a in content_words(x)}
    )
    return (
        contains_answer(line, gold.answer, gold.aliases)
        and len(extra) >= SENTENCE_EXTRA_WORDS
        and line.rstrip(".").strip() in view.sub_query
    )


def failure_anatomy(failures: Iterable[tuple[Sequence[HopView], Question]]) -> dict[str, object]:
    """``failures`` (natural failures' hop views with their questions) counted by where each left
    the gold path: ``failures``, ``by_hop.<hop>`` (``n``, ``gold_in_evidence``,
    ``gold_not_in_evidence``, ``after_sentence``), ``answer`` (every gold hop read right),
    ``incomplete`` (right as far as the run went, short of some gold hop) and ``no_gold`` (a
    question without a gold decomposition)."""
    by_hop: dict[str, dict[str, int]] = {}
    total = answer = incomplete = no_gold = 0
    for views, question in failures:
        total += 1
        if not question.hops:
            no_gold += 1
            continue
        row = left_gold_path(views, question)
        hop = row["hop"]
        if hop is None:
            if row.get("complete"):
                answer += 1
            else:
                incomplete += 1
            continue
        cell = by_hop.setdefault(
            str(hop), {"n": 0, "gold_in_evidence": 0, "gold_not_in_evidence": 0, "after_sentence": 0}
        )
        cell["n"] += 1
        cell["gold_in_evidence" if row["gold_in_evidence"] else "gold_not_in_evidence"] += 1
        cell["after_sentence"] += int(bool(row["after_sentence"]))
    return {
        "failures": total,
        "by_hop": dict(sorted(by_hop.items(), key=lambda kv: int(kv[0]))),
        "answer": answer,
        "incomplete": incomplete,
        "no_gold": no_gold,
    }


def stored_base_failures(
    store: SpanStore, questions: Sequence[Question], *, dataset: str, retriever: str, seed: int
) -> list[tuple[list[HopView], Question]]:
    """The fault sweep's stored base runs (its newest one per question) that failed, read back
    without running anything."""
    by_key = {base_key(dataset, retriever, seed, q.id): q for q in questions}
    seen: set[str] = set()
    out: list[tuple[list[HopView], Question]] = []
    for summary in store.list_runs(label=BASE_LABEL, limit=None):  # newest first
        key = str(summary.labels.get(BASE_LABEL))
        question = by_key.get(key)
        if question is None or key in seen:
            continue
        seen.add(key)
        if summary.outcome == Outcome.FAILURE:
            out.append((hop_views(store.get_trajectory(summary.run_id)), question))
    return out
