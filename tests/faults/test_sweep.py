"""The sweep runner on the live agent: resuming, per-unit error records, iter_units, persistent
corruption on a private index copy, and bad input."""

from __future__ import annotations

import contextvars
import threading

import pytest
from faults_helpers import make_env, small_world

from benchmarks.reference_agent.adapter import ReferenceAgentAdapter
from causal_middleware.faults.model import FaultLabel
from causal_middleware.faults.persistent import ScopedIndex, corrupted_copy
from causal_middleware.faults.sweep import RECORD_KIND, iter_units, latest_records, run_sweep, unit_key
from causal_middleware.retrieval.bm25 import BM25Index
from causal_middleware.store.stitch import own_steps
from causal_middleware.tasks.model import Passage
from causal_middleware.tasks.scoring import is_correct


def _question(qid: str):  # type: ignore[no-untyped-def]
    return next(q for q in small_world().questions if q.id == qid)


def test_a_rerun_skips_finished_units_and_makes_no_new_runs() -> None:
    env = make_env()
    questions = [_question("q0003"), _question("q0000")]
    try:
        first = run_sweep(
            env, questions, depths=[1, 3], families=["empty_retrieval", "early_termination"], workers=2
        )
        # q0000 has two hops: its hop-3 units land on hop 2 and are ineligible, not forked
        assert first.units == 8 and first.resumed == 0 and first.base_runs == 2
        assert first.statuses == {"done": 6, "ineligible": 2}
        runs = len(env.store.list_runs(limit=None))
        records = len(env.store.get_records(RECORD_KIND))
        assert records == 8
        ineligible = [r for r in first.records if r.status == "ineligible"]
        assert {(r.question_id, r.requested_hop, r.injected_hop) for r in ineligible} == {("q0000", 3, 2)}

        again = run_sweep(
            env, questions, depths=[1, 3], families=["empty_retrieval", "early_termination"], workers=2
        )
        assert again.resumed == 8 and again.records == [] and again.base_runs == 0
        assert len(env.store.list_runs(limit=None)) == runs
        assert len(env.store.get_records(RECORD_KIND)) == records
        assert again.base_correct == first.base_correct == 2
        # the key names the seed and the persistence flag: another seed is another unit
        assert unit_key("q0003", "empty_retrieval", 1, 0, False, dataset="d", retriever="bm25") != unit_key(
            "q0003", "empty_retrieval", 1, 1, False, dataset="d", retriever="bm25"
        )
    finally:
        env.close()


class _BrokenAnswerNow(ReferenceAgentAdapter):
    def answer_now_update(self, trajectory, hop):  # type: ignore[no-untyped-def]
        raise RuntimeError("boom: cannot build the answer-now update")


def test_a_failing_unit_leaves_an_error_record_and_is_retried_on_the_next_run() -> None:
    env = make_env()
    healthy_base = env.run_base

    def run_base(question):  # type: ignore[no-untyped-def]
        if question.id == "q0004":
            raise ConnectionError("the agent is down")
        return healthy_base(question)

    env.adapter, env.run_base = _BrokenAnswerNow(), run_base
    questions = [_question("q0003"), _question("q0004")]
    try:
        first = run_sweep(env, questions, depths=[1], families=["empty_retrieval", "early_termination"])
        by_unit = {(r.question_id, r.family): r for r in first.records}
        assert by_unit["q0003", "empty_retrieval"].status == "done"
        broken = by_unit["q0003", "early_termination"]
        assert (
            broken.status == "error" and "RuntimeError: boom" in broken.error and broken.fork_run_id is None
        )
        assert env.store.get_records(RECORD_KIND, broken.base_run_id)  # stored on the base run
        for family in ("empty_retrieval", "early_termination"):
            record = by_unit["q0004", family]
            assert (
                record.status == "error"
                and "the agent is down" in record.error
                and record.base_run_id is None
            )

        env.adapter, env.run_base = ReferenceAgentAdapter(), healthy_base
        second = run_sweep(env, questions, depths=[1], families=["empty_retrieval", "early_termination"])
        assert second.resumed == 1 and {r.status for r in second.records} == {"done"}
        assert {(r.question_id, r.family) for r in second.records} == {
            ("q0003", "early_termination"),
            ("q0004", "empty_retrieval"),
            ("q0004", "early_termination"),
        }
        assert {r.status for r in latest_records(env.store).values()} == {"done"}
    finally:
        env.close()


def test_iter_units_gives_base_fork_label_outcome_and_question(env) -> None:  # type: ignore[no-untyped-def]
    run_sweep(env, [_question("q0003")], depths=[3], families=["content_corruption", "empty_retrieval"])
    units = list(iter_units(env.store, families=["content_corruption"]))
    assert len(units) == 1
    base, faulted, label, recovered, outcome, question = units[0]
    assert (
        isinstance(label, FaultLabel)
        and label.family == "content_corruption"
        and label.corruption is not None
    )
    assert label.base_run_id == base.run_id and faulted.lineage.parent_run_id == base.run_id
    assert FaultLabel.model_validate(faulted.labels["fault"]) == label
    assert question.id == "q0003" and recovered == is_correct(faulted.answer, question)
    assert outcome in ("absorbed", "resisted", "derailed")
    assert is_correct(base.answer, question)
    assert {u.label.family for u in iter_units(env.store, depths=[3])} >= {
        "content_corruption",
        "empty_retrieval",
    }
    assert list(iter_units(env.store, persistent=True)) == []


def test_persistent_faults_live_in_a_private_index_copy_that_later_searches_hit(env) -> None:  # type: ignore[no-untyped-def]
    question = _question("q0006")
    hits = {}
    for persistent in (False, True):
        result = run_sweep(env, [question], depths=[1], families=["stale_evidence"], persistent=persistent)
        (record,) = result.records
        assert (
            record.status == "done"
            and record.label.persistent is persistent
            and record.persistent is persistent
        )
        (planted,) = record.label.planted
        assert planted.fabricated  # a passage the corpus does not have
        fork = env.store.get_trajectory(record.fork_run_id)
        later = [s for s in own_steps(fork) if s.kind == "retrieval" and (s.hop or 0) > 1]
        assert later, "the agent searched again after the fault"
        hits[persistent] = [d for s in later for d in s.documents if d.id == planted.passage_id]
    assert hits[False] == []  # re-retrieval healed the fault
    assert hits[True] and all(d.text == planted.text for d in hits[True])  # it could not
    with pytest.raises(KeyError):
        env.scoped_index.base.get(planted.passage_id)  # the shared index never saw it


def test_scoped_index_searches_the_override_only_inside_its_context() -> None:
    passages = [Passage(id="a", text="red apples"), Passage(id="b", text="green pears")]
    shared = BM25Index(passages)
    scoped = ScopedIndex(shared)
    private = corrupted_copy(scoped, [Passage(id="a", text="blue plums"), Passage(id="c", text="blue skies")])
    assert shared.get("a").text == "red apples" and len(shared) == 2 and len(private) == 3
    assert [h.passage.id for h in scoped.search("blue")] == []
    seen: list[list[str]] = []
    with scoped.override(private):
        assert {h.passage.id for h in scoped.search("blue")} == {"a", "c"}
        context = contextvars.copy_context()  # what LangGraph hands its worker threads
        worker = threading.Thread(
            target=lambda: seen.append([h.passage.id for h in context.run(scoped.search, "plums")])
        )
        worker.start()
        worker.join()
    assert seen == [["a"]]
    assert [h.passage.id for h in scoped.search("red")] == ["a"]
    with pytest.raises(TypeError, match="never writes"):
        scoped.upsert(Passage(id="a", text="x"))


def test_bad_sweep_input_raises_a_clear_error(env) -> None:  # type: ignore[no-untyped-def]
    q = [_question("q0003")]
    with pytest.raises(ValueError, match="depths must be positive"):
        run_sweep(env, q, depths=[0])
    with pytest.raises(ValueError, match="unknown fault families"):
        run_sweep(env, q, families=["typo"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="workers"):
        run_sweep(env, q, workers=0)
    scoped, env.scoped_index = env.scoped_index, None
    try:
        with pytest.raises(ValueError, match="ScopedIndex"):
            run_sweep(env, q, persistent=True)
    finally:
        env.scoped_index = scoped
