"""Rewording a reference-agent prompt for real models must not re-draw the offline model's runs.

The offline model seeds its random draws by the prompt text; the reading prompt was reworded on
2026-12-02 and registered with its first wording, so every offline run reads the same as before.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from benchmarks.models.offline import OfflineChatModel, Susceptibility
from benchmarks.models.offline_policy import Dice
from benchmarks.models.offline_prompts import dice_text, read_prompt, register_rewording
from benchmarks.reference_agent import build_world_agent, gold_plan, prompts, run_question
from benchmarks.world.generator import generate_world

FIELDS = {
    "question": "Where was the founder of Velmora Industries born?",
    "facts": "1. Who founded Velmora Industries? -> Ansa Korvell",
    "sub_query": "Where was Ansa Korvell born?",
    "evidence": "[1] Ansa Korvell (id p1): Ansa Korvell is a native of Tarsk.\n[2] Tarsk (id p2): Tarsk is a city.",
}


def test_a_reworded_reading_prompt_is_hashed_as_its_first_wording() -> None:
    reworded, first = prompts.READ.format(**FIELDS), prompts.READ_FIRST.format(**FIELDS)
    assert reworded != first
    assert dice_text(reworded) == first
    assert Dice(0, dice_text(reworded)).draw("x") == Dice(0, first).draw("x")


def test_an_unregistered_wording_is_hashed_as_itself() -> None:
    other = prompts.READ.format(**FIELDS).replace("copy its answer", "give its answer")
    assert dice_text(other) == other
    assert Dice(0, other).prompt_digest != Dice(0, prompts.READ_FIRST.format(**FIELDS)).prompt_digest


def test_a_repeated_field_must_repeat_the_same_value() -> None:
    register_rewording("Q: {question}\nAgain: {question}", "Question: {question}")
    assert dice_text("Q: a\nAgain: a") == "Question: a"
    assert dice_text("Q: a\nAgain: b") == "Q: a\nAgain: b"


def test_the_reworded_prompt_reads_the_same_for_the_offline_model() -> None:
    view, first_view = (
        read_prompt(prompts.READ.format(**FIELDS)),
        read_prompt(prompts.READ_FIRST.format(**FIELDS)),
    )
    assert view.task == first_view.task == "read"
    assert (view.question, view.sub_question, view.facts, view.evidence) == (
        first_view.question,
        first_view.sub_question,
        first_view.facts,
        first_view.evidence,
    )


@pytest.mark.parametrize("temperature", [0.0, 0.7])
def test_offline_replies_are_identical_under_either_wording(temperature: float) -> None:
    model = OfflineChatModel(seed=3, temperature=temperature, susceptibility=Susceptibility.gullible())
    replies = []
    for template in (prompts.READ, prompts.READ_FIRST):
        fresh = model.model_copy()
        replies.append(
            [
                str(
                    fresh.invoke(
                        [SystemMessage(prompts.SYSTEM), HumanMessage(template.format(**FIELDS))]
                    ).content
                )
                for _ in range(5)
            ]
        )
    assert replies[0] == replies[1]


def test_reference_agent_runs_are_identical_under_the_first_wording(monkeypatch: pytest.MonkeyPatch) -> None:
    world = generate_world(24, seed=11)
    questions = world.questions[:12]

    def runs() -> list[object]:
        agent = build_world_agent(world, k=3, seed=11)
        out: list[object] = []
        for q in questions:
            run = run_question(agent, q, plan=gold_plan(q) if q.id.endswith(("0", "2", "4")) else None)
            out.append((run.answer, [(h.get("sub_query"), h.get("fact"), h.get("notes")) for h in run.hops]))
        return out

    reworded = runs()
    monkeypatch.setattr(prompts, "READ", prompts.READ_FIRST)
    assert runs() == reworded
    # the check has power: a wording nobody registered re-draws some of these runs
    monkeypatch.setattr(
        prompts, "READ", prompts.READ_FIRST.replace("from the evidence alone", "from the evidence")
    )
    assert runs() != reworded
