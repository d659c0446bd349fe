"""The delta ("expected X but got Y") from corrections and tool errors."""

from __future__ import annotations

import pytest

from causal_middleware.context.delta import claimed_subject, correction_delta
from causal_middleware.context.instructions import instruction_from
from causal_middleware.context.tool_errors import allowed_values, tool_error_delta


@pytest.mark.parametrize(
    ("correction", "answer", "expected", "got"),
    [
        ("No, that's wrong. It's $35 now.", "The overdraft fee is $25 per item.", "$35", "$25"),
        (
            "That's outdated, it's 120 days now, not 60 days.",
            "Disputes must be filed within 90 days.",
            "120 days",
            "60 days",
        ),
        (
            "We don't use fax anymore, it's the online portal now.",
            "Send the form by fax.",
            "online portal",
            "fax",
        ),
        (
            "That's a different thing. The records fee is $15.",
            "Records are released within 10 days.",
            "$15",
            "10 days",
        ),
        (
            "Hmm, IT told us 24 hours last month, not 12 hours.",
            "Passes are valid for 12 hours.",
            "24 hours",
            "12 hours",
        ),
        (
            "Wrong. The capital is Canberra, not Sydney.",
            "The capital of Australia is Sydney.",
            "Canberra",
            "Sydney",
        ),
    ],
)
def test_value_corrections(correction: str, answer: str, expected: str, got: str) -> None:
    kind, exp, g, instruction = correction_delta(correction, answer)
    assert (kind, exp, g, instruction) == ("value", expected, got, None)


@pytest.mark.parametrize(
    ("correction", "rule"),
    [
        (
            "You're not supposed to give investment advice. You should refer me to a licensed advisor.",
            "Do not give investment advice. Refer the user to a licensed advisor.",
        ),
        (
            "Hang on, aren't you supposed to check my date of birth first?",
            "Check the user's date of birth first.",
        ),
        (
            "Shouldn't you have told me to call 911 for chest pain?",
            "Tell the user to call 911 for chest pain.",
        ),
        ("You need to tell people with chest pain to call 911!", "Tell people with chest pain to call 911."),
    ],
)
def test_behavioural_corrections_become_rules(correction: str, rule: str) -> None:
    kind, expected, got, instruction = correction_delta(correction, "Sure, next Wednesday.")
    assert kind == "behaviour" and got is None and expected == correction
    assert instruction == rule == instruction_from(correction)


def test_a_value_stated_before_a_complaint_stays_a_value() -> None:
    assert correction_delta("25. you really should have that documented", "I can't find that.")[:2] == (
        "value",
        "25",
    )


def test_no_delta_in_a_bare_complaint() -> None:
    assert correction_delta("Ugh, this is frustrating.", "Here you go.") == ("none", None, None, None)


@pytest.mark.parametrize(
    ("error", "args", "expected", "got"),
    [
        (
            "Error 400: unknown parameter 'acct_no'; expected 'account_id'.",
            '{"acct_no": "x"}',
            "account_id",
            "acct_no",
        ),
        (
            "Error 422: invalid value 'instant' for parameter 'speed'; expected 'same_day'.",
            '{"speed": "instant"}',
            "same_day",
            "instant",
        ),
        (
            "Error: unrecognized argument 'claim_no' (did you mean 'claim_id'?)",
            '{"claim_no": "1"}',
            "claim_id",
            "claim_no",
        ),
        (
            "Request rejected: 'Main St' is not a valid pharmacy code. Use 'RX-014'.",
            '{"pharmacy": "Main St"}',
            "RX-014",
            "Main St",
        ),
    ],
)
def test_tool_error_delta(error: str, args: str, expected: str, got: str) -> None:
    assert tool_error_delta(error, args) == (expected, got)


def test_allowed_values_from_unquoted_and_quoted_lists() -> None:
    assert allowed_values("priority must be one of P1, P2, P3 (got 'critical')") == ["P1", "P2", "P3"]
    assert allowed_values("Expected keys: 'device', 'start_date', 'days'.") == [
        "device",
        "start_date",
        "days",
    ]
    assert allowed_values("Error 500: internal error") == []


def test_claimed_subject() -> None:
    assert claimed_subject("No, that's not it. The overdraft fee is $35.", "$35") == "overdraft fee"
    assert (
        claimed_subject("No, I asked about the telehealth visit length. It's 20 minutes.", "20 minutes")
        == "telehealth visit length"
    )
    assert claimed_subject("It's $35 now.", "$35") is None


def test_a_name_stated_as_the_subjects_value_is_the_expected_value() -> None:
    kind, expected, _, _ = correction_delta(
        "That's incorrect, the capital is Canberra.", "The capital of Australia is Sydney."
    )
    assert (kind, expected) == ("value", "Canberra")
