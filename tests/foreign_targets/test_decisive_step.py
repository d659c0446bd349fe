"""The decisive-step diagnoser on small chat logs written for the test, each with a planted decisive
error at a known position: an acting agent's misreport in a long orchestrated log, a code tool's
caller, an answer nothing supported, a run that loops until its budget runs out."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.foreign.methods import not_run, runnable
from causal_middleware.attribution.base import Diagnosis, DiagnosisContext
from causal_middleware.attribution.decisive_step import answer_line
from causal_middleware.attribution.registry import get_diagnoser, is_passive
from causal_middleware.spans.builder import build_trajectory
from causal_middleware.spans.model import Trajectory
from causal_middleware.store.whowhen import read_whowhen

QUESTION = "How tall is the old lighthouse on the north pier, in metres?"
LEDGER = (
    'Updated Ledger:\n{\n  "is_request_satisfied": {\n    "reason": "We still need the height of the '
    'lighthouse from a reliable page.",\n    "answer": false\n  }\n}'
)
NOISE = "  response = await client.create(messages)\n/workspace/run.py:116: UserWarning: model 2024-08-06"


def _write(tmp_path: Path, history: list[dict[str, str]], subset: str, question: str) -> Path:
    path = tmp_path / subset / "1.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"question": question, "ground_truth": "45", "history": history}
    path.write_text(json.dumps({**body, "mistake_agent": "nobody", "mistake_step": "0"}))
    return path


def _orchestrated(tmp_path: Path, roles_and_texts: list[tuple[str, str]]) -> Trajectory:
    """A log in the orchestrated format: the agent in ``role``, what it did in parentheses."""
    history = [{"role": role, "content": text} for role, text in roles_and_texts]
    return build_trajectory(read_whowhen(_write(tmp_path, history, "Hand-Crafted", QUESTION)))


def _group_chat(tmp_path: Path, names_and_texts: list[tuple[str, str]]) -> Trajectory:
    history = [{"name": name, "role": "user", "content": text} for name, text in names_and_texts]
    question = "How many apples are in the crate?"
    return build_trajectory(read_whowhen(_write(tmp_path, history, "Algorithm-Generated", question)))


def _diagnose(t: Trajectory) -> tuple[int, Diagnosis]:
    d = get_diagnoser("decisive_step").diagnose(t)
    assert d.ran and d.step_id is not None
    return [s.step_id for s in t.steps].index(d.step_id), d


def _lighthouse_log(report: str, final: str) -> list[tuple[str, str]]:
    request = "Please search the web for the height of the old lighthouse on the north pier and report it."
    return [
        ("human", QUESTION),
        (
            "Orchestrator (thought)",
            f"Initial plan:\n\nWe are working to address: {QUESTION}\nSearch the web.",
        ),
        ("Orchestrator (thought)", LEDGER),
        ("Orchestrator (-> WebSurfer)", request),
        ("Orchestrator (thought)", "Next speaker WebSurfer"),
        (
            "WebSurfer",
            "I typed 'north pier lighthouse height' into the search box. Results: town pier guide.",
        ),
        ("Orchestrator (thought)", LEDGER),
        (
            "Orchestrator (-> WebSurfer)",
            "Please open the town pier guide page and read the lighthouse height.",
        ),
        ("Orchestrator (thought)", "Next speaker WebSurfer"),
        ("WebSurfer", report),
        ("Orchestrator (thought)", "Updated Ledger: the request is satisfied, the height was reported."),
        ("Orchestrator (termination condition)", f"No agent selected.\n{NOISE}\n{final}\nRUN COMPLETE"),
    ]


def test_an_acting_agents_misreport_that_reaches_the_final_answer_is_blamed(tmp_path: Path) -> None:
    report = "I clicked 'Town pier guide'. The page says the old lighthouse is 312 metres tall."
    t = _orchestrated(tmp_path, _lighthouse_log(report, "FINAL ANSWER: 312"))
    index, d = _diagnose(t)
    # the web surfer read the page and reported the wrong height: its own message, not the request
    assert index == 9 and d.agent == "WebSurfer"
    assert d.details["rule"] == "claim_origin" and d.details["key_claims"] == ["312"]
    assert not d.uses_gold


def test_a_text_answer_is_traced_to_the_first_message_holding_it(tmp_path: Path) -> None:
    report = "I clicked 'Town pier guide'. The guide names the Harbour Beacon as the pier's lighthouse."
    t = _orchestrated(tmp_path, _lighthouse_log(report, "FINAL ANSWER: Harbour Beacon"))
    index, d = _diagnose(t)
    assert index == 9 and d.details["claims"] == ["beacon", "harbour"]


def test_an_answer_no_message_supports_is_blamed_on_the_conclusion(tmp_path: Path) -> None:
    report = "I clicked 'Town pier guide'. The page lists opening hours but no height."
    t = _orchestrated(tmp_path, _lighthouse_log(report, "FINAL ANSWER: 1,234"))
    index, d = _diagnose(t)
    assert index == len(t.steps) - 1 and d.agent == "Orchestrator"
    assert d.details["unsupported"] is True and d.details["claims"] == ["1234"]


def test_a_run_stopped_by_its_budget_is_blamed_on_the_request_it_kept_repeating(tmp_path: Path) -> None:
    request = "Please open the town pier guide page and read the height of the old lighthouse."
    log: list[tuple[str, str]] = [
        ("human", QUESTION),
        (
            "Orchestrator (thought)",
            f"Initial plan:\n\nWe are working to address: {QUESTION}\nSearch the web.",
        ),
        ("Orchestrator (-> WebSurfer)", "Please search the web for pages about the north pier lighthouse."),
        ("Orchestrator (thought)", "Next speaker WebSurfer"),
        (
            "WebSurfer",
            "I typed 'north pier lighthouse' into the search box. Results: town pier guide, 9 hits.",
        ),
    ]
    for attempt in range(3):
        log += [
            ("Orchestrator (-> WebSurfer)", request),
            ("Orchestrator (thought)", "Next speaker WebSurfer"),
            (
                "WebSurfer",
                f"I scrolled down one page (attempt {attempt + 7}). The viewport shows a cookie banner.",
            ),
        ]
    log.append(("Orchestrator (termination condition)", f"Max rounds (30) reached.\n{NOISE}"))
    index, d = _diagnose(_orchestrated(tmp_path, log))
    assert index == 5 and d.details["rule"] == "loop_onset"  # the first time the request was made


def test_the_code_that_computed_the_final_number_is_blamed_not_the_tool(tmp_path: Path) -> None:
    t = _group_chat(
        tmp_path,
        [
            ("Lead_Expert", "How many apples are in the crate? Plan: count rows, then verify."),
            ("Count_Expert", "Counting the rows of the crate list.\n```python\nprint(12 * 4)\n```"),
            ("Computer_terminal", "exitcode: 0 (execution succeeded)\nCode output: 48"),
            ("Check_Expert", "I checked the code and its output: there are 48 apples in the crate."),
            ("Lead_Expert", "TERMINATE"),
        ],
    )
    index, d = _diagnose(t)
    assert index == 1 and d.agent == "Count_Expert" and d.details["rule"] == "claim_origin"


def test_a_failure_word_deep_in_tool_output_is_page_content_not_a_failed_call(tmp_path: Path) -> None:
    page = "exitcode: 0 (execution succeeded)\nCode output: " + "crate inventory listing " * 8
    t = _group_chat(
        tmp_path,
        [
            ("Lead_Expert", "How many apples are in the crate? Plan: read the inventory page."),
            ("Reader_Expert", "Fetching the inventory page.\n```python\nfetch('inventory')\n```"),
            ("Computer_terminal", page + "footer: report an error to the webmaster"),
            ("Parser_Expert", "Parsing the listing.\n```python\nparse('inventory')\n```"),
            ("Computer_terminal", "exitcode: 1 (execution failed)\nCode output: Traceback: KeyError"),
            ("Lead_Expert", "We could not settle how many apples the crate holds."),
        ],
    )
    index, d = _diagnose(t)
    assert index == 3 and d.details["rule"] == "first_failed_call"


def test_it_never_reads_labels_or_the_reference_and_is_deterministic(tmp_path: Path) -> None:
    report = "I clicked 'Town pier guide'. The page says the old lighthouse is 312 metres tall."
    t = _orchestrated(tmp_path, _lighthouse_log(report, "FINAL ANSWER: 312"))
    blind = t.model_copy(update={"labels": {"whowhen.mistake_step": 3, "whowhen.mistake_agent": "X"}})
    diagnoser = get_diagnoser("decisive_step")
    first = diagnoser.diagnose(t)
    again = diagnoser.diagnose(blind, DiagnosisContext(reference="45 metres"))
    assert (first.step_id, first.details) == (again.step_id, again.details)
    assert is_passive("decisive_step") and not diagnoser.uses_gold and not again.uses_gold


def test_answer_line_reads_conclusions_not_code_or_data_fields() -> None:
    assert answer_line("noise\nFINAL ANSWER: 5\nRUN COMPLETE") == "5"
    assert answer_line('    "answer": false') is None
    assert answer_line("answer = image_qa(path, question)") is None
    assert answer_line("Thus, the answer to the question is: white") == "white"


def test_the_foreign_benchmarks_run_it_as_an_offline_method() -> None:
    assert "decisive_step" in runnable() and "decisive_step" not in not_run()
