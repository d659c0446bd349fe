"""BM25 over the MuSiQue sample: how often do the gold sub-questions retrieve their gold paragraph?

Loads ``../shared/data/musique`` (or ``$CAUSAL_MW_DATA``), indexes its 1,890 paragraphs with
``BM25Index``, asks every gold sub-question (``#k`` filled in with hop k's gold answer) through the
LangChain ``IndexRetriever``, and prints recall@k per hop position, then scores a few answers.
Offline, a few seconds. Run: ``python examples/retrieval_musique.py [-k 5] [--backend bm25s]``.
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict

from benchmarks.world.loaders import load_musique
from causal_middleware.retrieval import BM25Index, IndexRetriever
from causal_middleware.tasks.scoring import exact_match, f1, is_correct


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--backend", choices=["auto", "bm25s", "rank_bm25"], default="auto")
    args = parser.parse_args()

    dataset = load_musique()
    index = BM25Index(dataset.passages, backend=args.backend)
    retriever = IndexRetriever(index=index, k=args.k)
    print(f"{len(dataset.questions)} questions, {len(index)} passages, BM25 backend {index.backend}")

    hits: dict[int, list[bool]] = defaultdict(list)
    for question in dataset.questions:
        answers: dict[str, str] = {}
        for hop in question.hops:
            query = re.sub(r"#(\d+)", lambda m, known=answers: known.get(m.group(1), ""), hop.question)
            ids = {doc.id for doc in retriever.invoke(query)}
            hits[hop.index].append(bool(ids & set(hop.supporting_passage_ids)))
            answers[str(hop.index)] = hop.answer
    for position in sorted(hits):
        found = hits[position]
        print(
            f"hop {position}: recall@{args.k} = {sum(found) / len(found):.2f} over {len(found)} sub-questions"
        )

    question = dataset.questions[0]
    print(f"\nQ: {question.text}\ngold: {question.answer!r}, aliases {question.aliases}")
    for prediction in ["G. Stanley Hall", "Stanley Hall", "It was G. Stanley Hall.", "Granville Hall"]:
        print(
            f"  {prediction!r:28} EM={exact_match(prediction, question.answer, question.aliases)!s:5} "
            f"F1={f1(prediction, question.answer, question.aliases):.2f} correct={is_correct(prediction, question)}"
        )


if __name__ == "__main__":
    main()
