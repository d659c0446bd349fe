"""The natural-failure anatomy: where a failed run first left the gold path, read passively."""

from __future__ import annotations

from benchmarks.suites.anatomy import failure_anatomy, left_gold_path
from causal_middleware.attribution.hops import HopView
from causal_middleware.spans.model import Document
from causal_middleware.tasks.model import HopGold, Question

QUESTION = Question(
    id="q",
    text="What is the population of the birthplace of Thaisra Nofi?",
    answer="1,987,935",
    hops=[
        HopGold(index=1, question="Where was Thaisra Nofi born?", answer="Vaigres"),
        HopGold(index=2, question="What is the population of #1?", answer="1,987,935"),
    ],
)
BORN = Document(id="a", text="Thaisra Nofi was born in Vaigres.")
POPULATION = Document(id="b", text="The population of Vaigres is 1,987,935.")
DISTRACTOR = Document(id="c", text="The population of West Vaigres is 2,020,545.")
PHYSICIAN = Document(id="d", text="Thaisra Nofi is a physician in Kethe.")


def _run(fact_1: str, docs_1: list[Document], fact_2: str, docs_2: list[Document]) -> list[HopView]:
    bridge = fact_1.splitlines()[0].removeprefix("Fact: ")
    return [
        HopView(index=1, sub_query="Where was Thaisra Nofi born?", fact=fact_1, documents=docs_1),
        HopView(index=2, sub_query=f"What is the population of {bridge}?", fact=fact_2, documents=docs_2),
    ]


def test_each_shape_of_failure_lands_in_its_own_cell() -> None:
    sentence = _run("Fact: Thaisra Nofi was born in Vaigres.", [BORN], "Vaigres", [BORN])
    misread = _run("Vaigres", [BORN], "2,020,545", [DISTRACTOR, POPULATION])
    missed = _run("Kethe", [PHYSICIAN], "unknown", [DISTRACTOR])
    answer = _run("Vaigres", [BORN], "1,987,935", [POPULATION])
    assert left_gold_path(sentence, QUESTION) == {"hop": 2, "gold_in_evidence": False, "after_sentence": True}
    assert left_gold_path(misread, QUESTION) == {"hop": 2, "gold_in_evidence": True, "after_sentence": False}
    assert left_gold_path(missed, QUESTION) == {"hop": 1, "gold_in_evidence": False, "after_sentence": False}
    assert left_gold_path(answer, QUESTION)["hop"] is None
    stopped = answer[:1]  # read hop 1 right and answered without searching hop 2
    assert left_gold_path(stopped, QUESTION)["complete"] is False
    assert left_gold_path(answer, QUESTION)["complete"] is True

    profile = failure_anatomy(
        [(v, QUESTION) for v in (sentence, misread, missed, answer, stopped, [])]
        + [(missed, QUESTION.model_copy(update={"hops": []}))]
    )
    assert profile == {
        "failures": 7,
        "by_hop": {
            "1": {"n": 1, "gold_in_evidence": 0, "gold_not_in_evidence": 1, "after_sentence": 0},
            "2": {"n": 2, "gold_in_evidence": 1, "gold_not_in_evidence": 1, "after_sentence": 1},
        },
        "answer": 1,
        "incomplete": 2,
        "no_gold": 1,
    }


def test_a_bridge_that_is_the_value_alone_is_not_a_sentence() -> None:
    # hop 1's reading is its value with a label; hop 2 searched for the value, not a sentence
    views = _run("Fact: Vaigres", [BORN], "2,020,545", [DISTRACTOR])
    assert left_gold_path(views, QUESTION)["after_sentence"] is False


def test_a_tool_hops_output_counts_as_its_evidence() -> None:
    views = [
        HopView(
            index=1,
            sub_query="Where was Thaisra Nofi born?",
            fact="Kethe",
            kind="tool",
            tool_outputs=["born in Vaigres"],
        )
    ]
    assert left_gold_path(views, QUESTION)["gold_in_evidence"] is True
