"""decisive_step on a run that submitted an answer (a Who&When Hand-Crafted log's ``FINAL ANSWER:``
line, now the run's answer): the submission is the claim traced, and the line that prints it, in
whichever message came last, is the conclusion, not the message that introduced the claim."""

from __future__ import annotations

import json
from pathlib import Path

from causal_middleware.attribution.base import Diagnosis
from causal_middleware.attribution.registry import get_diagnoser
from causal_middleware.spans.builder import build_trajectory
from causal_middleware.spans.model import Trajectory
from causal_middleware.store.whowhen import read_whowhen

QUESTION = "Which lighthouse stands on the north pier of the old harbour town?"
TRAILER = "  response = await client.create(messages)\nFINAL ANSWER: {}\nSCENARIO.PY COMPLETE !#!#"


def _run(tmp_path: Path, roles_and_texts: list[tuple[str, str]]) -> Trajectory:
    path = tmp_path / "Hand-Crafted" / "1.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    history = [{"role": role, "content": text} for role, text in roles_and_texts]
    body = {"question": QUESTION, "ground_truth": "North Light", "history": history}
    path.write_text(json.dumps({**body, "mistake_agent": "nobody", "mistake_step": "0"}))
    return build_trajectory(read_whowhen(path))


def _diagnose(t: Trajectory) -> tuple[int, Diagnosis]:
    d = get_diagnoser("decisive_step").diagnose(t)
    assert d.ran and d.step_id is not None
    return [s.step_id for s in t.steps].index(d.step_id), d


def _log(report: str, last_page: str) -> list[tuple[str, str]]:
    return [
        ("human", QUESTION),
        (
            "Orchestrator (thought)",
            f"Initial plan:\n\nWe are working to address: {QUESTION}\nSearch the web.",
        ),
        ("Orchestrator (-> WebSurfer)", "Please search the web for the lighthouse on the north pier."),
        ("Orchestrator (thought)", "Next speaker WebSurfer"),
        ("WebSurfer", "I typed 'north pier lighthouse' into the search box. Results: a town guide."),
        (
            "Orchestrator (-> WebSurfer)",
            "Please open the town guide page and read which lighthouse it names.",
        ),
        ("WebSurfer", report),
        ("Orchestrator (thought)", "Updated Ledger: the request is satisfied, the lighthouse was named."),
        ("Orchestrator (-> WebSurfer)", "Please scroll down to check the guide's footer for corrections."),
        ("WebSurfer", last_page),
    ]


def test_the_submitted_text_answer_is_traced_to_the_report_that_introduced_it(tmp_path: Path) -> None:
    report = "I clicked 'Town guide'. The guide names the Harbour Beacon as the pier's lighthouse."
    last = "I scrolled down one page. The footer lists opening hours.\n" + TRAILER.format("Harbour Beacon")
    t = _run(tmp_path, _log(report, last))
    assert t.answer == "Harbour Beacon"
    index, d = _diagnose(t)
    # the acting agent's report, not the last message that merely carries the printed submission
    assert index == 6 and d.agent == "WebSurfer"
    assert d.details["rule"] == "claim_origin" and d.details["claims"] == [
        "beacon"
    ]  # "harbour" is in the question
    assert d.details["unsupported"] is False


def test_a_submitted_answer_no_message_supports_is_the_concluding_agents(tmp_path: Path) -> None:
    report = "I clicked 'Town guide'. The page lists ferry times but names no lighthouse."
    last = "I scrolled down one page. The footer lists opening hours."
    roles = [*_log(report, last), ("Orchestrator (termination condition)", "FINAL ANSWER: Harbour Beacon")]
    index, d = _diagnose(_run(tmp_path, roles))
    # the submission printed alone is no message: the last agent message concluded unsupported
    assert index == 8 and d.agent == "Orchestrator"
    assert d.details["rule"] == "claim_origin" and d.details["unsupported"] is True


def test_an_unsupported_submission_printed_into_a_crashed_last_call_is_blamed_there(tmp_path: Path) -> None:
    report = "I clicked 'Town guide'. The page lists ferry times but names no lighthouse."
    crash = (
        'I scrolled down one page.\nTraceback (most recent call last):\n  File "surfer.py", line 9\n'
        "BadRequestError: the page request was refused by the content filter\n"
    )
    index, d = _diagnose(_run(tmp_path, _log(report, crash + TRAILER.format("Harbour Beacon"))))
    # the run ended in that call and the answer came from nothing: not the request before it
    assert index == 9 and d.agent == "WebSurfer" and d.details["unsupported"] is True


def test_a_submitted_number_is_traced_past_its_own_submission_line(tmp_path: Path) -> None:
    report = "I clicked 'Town guide'. The guide says the lighthouse light is visible for 17 nautical miles."
    roles = _log(report, "I scrolled down one page. The footer lists opening hours.")
    roles.append(("Orchestrator (termination condition)", "No agent selected.\n" + TRAILER.format("17")))
    index, d = _diagnose(_run(tmp_path, roles))
    assert index == 6 and d.details["key_claims"] == ["17"] and d.details["unsupported"] is False
