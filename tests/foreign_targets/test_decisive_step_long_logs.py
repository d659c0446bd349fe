"""decisive_step on long orchestrated logs (small logs written for the test, each with a planted
origin): a submission that says nothing was found, a name introduced only where all of it is, a
list answer, and a value deep in a page that no agent took up."""

from __future__ import annotations

import json
from pathlib import Path

from causal_middleware.attribution.base import Diagnosis
from causal_middleware.attribution.registry import get_diagnoser
from causal_middleware.spans.builder import build_trajectory
from causal_middleware.spans.model import Trajectory
from causal_middleware.store.whowhen import read_whowhen

QUESTION = "Which ferry line serves the north pier of the old harbour town, and how many boats run daily?"
LEDGER = "Updated Ledger: the request is not yet satisfied; we still need the ferry line of the pier."
END = "No agent selected.\n  response = await client.create(messages)\nFINAL ANSWER: {}\nRUN COMPLETE"
PAGE = "I clicked 'Harbour guide'.\nHere is a screenshot of the harbour guide page. OCR text:\n"


def _run(tmp_path: Path, roles_and_texts: list[tuple[str, str]]) -> Trajectory:
    path = tmp_path / "Hand-Crafted" / "1.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    history = [{"role": role, "content": text} for role, text in roles_and_texts]
    body = {"question": QUESTION, "ground_truth": "Blue Star", "history": history}
    path.write_text(json.dumps({**body, "mistake_agent": "nobody", "mistake_step": "0"}))
    return build_trajectory(read_whowhen(path))


def _diagnose(t: Trajectory) -> tuple[int, Diagnosis]:
    d = get_diagnoser("decisive_step").diagnose(t)
    assert d.ran and d.step_id is not None
    return [s.step_id for s in t.steps].index(d.step_id), d


def _log(first_page: str, reader: str, second_page: str, final: str) -> list[tuple[str, str]]:
    return [
        ("human", QUESTION),
        (
            "Orchestrator (thought)",
            f"Initial plan:\n\nWe are working to address: {QUESTION}\nSearch the web.",
        ),
        ("Orchestrator (-> WebSurfer)", "Please search the web for the ferry line of the north pier."),
        ("WebSurfer", first_page),
        ("Orchestrator (thought)", reader),
        ("Orchestrator (-> WebSurfer)", "Please open the timetable page and read the ferry line and boats."),
        ("WebSurfer", second_page),
        ("Orchestrator (thought)", "Updated Ledger: the request is satisfied, the line was reported."),
        ("Orchestrator (termination condition)", END.format(final)),
    ]


def test_a_submission_that_says_nothing_was_found_is_no_claim(tmp_path: Path) -> None:
    page = PAGE + "Ferry times: see the timetable. Unable to determine the line from this page."
    log = _log(page, LEDGER, "I scrolled down. The timetable lists departures.", "Unable to determine")
    index, d = _diagnose(_run(tmp_path, log))
    assert d.details["rule"] != "claim_origin" and "claims" not in d.details
    assert index == 1  # with no claim and no failed call: the first substantive reply (the plan)


def test_a_name_is_introduced_where_all_of_it_is_not_where_a_common_word_of_it_is(tmp_path: Path) -> None:
    first = PAGE + "Star ratings for harbour cafes: four star, five star. Ferry information below."
    second = "I clicked 'Timetable'. The timetable says the Blue Star line serves the north pier."
    index, d = _diagnose(_run(tmp_path, _log(first, LEDGER, second, "Blue Star")))
    # the first page holds "star" (half of the name's terms) but not the name: the report does
    assert index == 6 and d.details["claims"] == ["blue", "star"] and d.details["unsupported"] is False


def test_a_list_answer_is_introduced_where_half_of_its_items_are(tmp_path: Path) -> None:
    first = "I clicked 'Lines'. The guide lists the Blue Star line and the Red Gull line at the pier."
    second = "I clicked 'Timetable'. Blue Star, Red Gull and Green Wave lines call at the north pier."
    index, d = _diagnose(_run(tmp_path, _log(first, LEDGER, second, "Blue Star, Red Gull, Green Wave")))
    assert index == 3 and d.agent == "WebSurfer"  # two of three items, each whole: the first report


def test_a_value_deep_in_a_page_nobody_took_up_is_page_content(tmp_path: Path) -> None:
    filler = "Harbour events calendar, parking and opening hours of the museum. " * 3
    first = PAGE + filler + "Museum rooms: 14."
    reader = "Updated Ledger: the page did not give the ferry line; we still need the timetable page."
    second = "I clicked 'Timetable'. The timetable says 14 boats run daily on the pier's line."
    index, d = _diagnose(_run(tmp_path, _log(first, reader, second, "14")))
    # "14" first appears deep in the first page, which its reader did not take up; the report did
    assert index == 6 and d.details["key_claims"] == ["14"]


def test_a_value_deep_in_a_page_its_reader_restates_is_where_it_came_from(tmp_path: Path) -> None:
    filler = "Harbour events calendar, parking and opening hours of the museum. " * 3
    first = PAGE + filler + "Ferry boats per day: 14."
    reader = "Updated Ledger: the guide says 14 boats run daily; we still need the ferry line."
    second = "I clicked 'Timetable'. The timetable confirms 14 boats a day."
    index, d = _diagnose(_run(tmp_path, _log(first, reader, second, "14")))
    assert index == 3 and d.agent == "WebSurfer" and d.details["key_claims"] == ["14"]
