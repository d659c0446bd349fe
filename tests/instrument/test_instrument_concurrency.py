"""Several runs at once (threads, asyncio tasks): one trace each, no span mixing (item 5 f)."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor

from instrument_graphs import CHAINS, build_async_loop_graph, build_loop_graph, loop_input
from instrument_spans import attr, doc_ids

from causal_middleware import instrument
from causal_middleware.spans import attributes as A
from causal_middleware.store.sqlite import SqliteSpanStore

QUESTIONS = list(CHAINS)


def _check_run(tree, run_id: str, question: str) -> None:
    own = tree.of_trace(run_id)
    subqueries, answer = CHAINS[question]
    run = own.one("run")
    assert json.loads(attr(run, A.INPUT_VALUE))["question"] == question
    assert attr(run, A.SESSION_ID) == f"thread-{question}"
    # exactly this run's nodes, in this run's hops
    expected = []
    for hop in range(1, len(subqueries) + 1):
        expected += [("retrieve", hop), ("read", hop)]
    assert own.node_sequence() == expected + [("answer", None)], own.render()
    hops = own.hops()
    assert [attr(hops[i], A.CAUSAL_HOP_SUB_QUERY) for i in sorted(hops)] == subqueries
    for retrieval in own.typed("retrieval"):
        assert attr(retrieval, A.INPUT_VALUE) in subqueries
        assert own.parent(own.parent(retrieval)).context.trace_id == run.context.trace_id
    assert attr(own.one("answer"), A.CAUSAL_ANSWER_TEXT) == answer
    # every span's parent is in the same trace (nothing dangles into another run)
    for span in own.spans:
        if span is not run:
            assert own.parent(span) is not None, span.name


def test_eight_threads_no_span_mixing(make_instrumented, spans):
    ig = make_instrumented(build_loop_graph())
    jobs = [QUESTIONS[i % len(QUESTIONS)] for i in range(8)]

    def one(question: str) -> tuple[str, str | None, str]:
        out = ig.invoke(loop_input(question), {"configurable": {"thread_id": f"thread-{question}"}})
        return question, ig.last_run_id, out["answer"]

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(one, jobs))

    tree = spans()
    run_ids = [run_id for _, run_id, _ in results]
    assert len(set(run_ids)) == 8 and None not in run_ids
    assert tree.trace_ids == {int(r, 16) for r in run_ids}
    for question, run_id, answer in results:
        assert answer == CHAINS[question][1]
        _check_run(tree, run_id, question)
    assert ig.handler.open_spans == 0


def test_concurrent_async_tasks_no_span_mixing(make_instrumented, spans):
    ig = make_instrumented(build_async_loop_graph())

    async def one(question: str) -> tuple[str, str | None]:
        await ig.ainvoke(loop_input(question), {"configurable": {"thread_id": f"thread-{question}"}})
        return question, ig.last_run_id  # last_run_id is per task

    async def main() -> list[tuple[str, str | None]]:
        return await asyncio.gather(*(one(q) for q in QUESTIONS * 2))

    results = asyncio.run(main())
    tree = spans()
    assert len({r for _, r in results}) == len(results)
    for question, run_id in results:
        _check_run(tree, run_id, question)
    first = tree.of_trace(results[0][1]).typed("retrieval")[0]
    assert doc_ids(first)  # documents recorded under concurrency too


def test_threads_writing_to_one_sqlite_store(tmp_path):
    store = SqliteSpanStore(tmp_path / "runs.db")
    ig = instrument(build_loop_graph(), store=store)

    def one(question: str) -> tuple[str, str | None]:
        ig.invoke(loop_input(question), {"configurable": {"thread_id": f"thread-{question}"}})
        return question, ig.last_run_id

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(one, QUESTIONS + QUESTIONS[:1]))
    ig.shutdown()
    for question, run_id in results:
        traj = store.get_trajectory(run_id)
        subqueries, answer = CHAINS[question]
        assert traj.thread_id == f"thread-{question}"
        assert [h.sub_query for h in traj.hops] == subqueries
        assert traj.answer == answer
    assert len(store.list_runs()) == len(results)
    store.close()
