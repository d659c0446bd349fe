"""Round 16 of issue 19: a schema validator's error body read by structure, whatever its
dialect: a serialised exception ({"name": "...Error", "issues": [...]}) is an error; a plural
written "key(s)" is one word; a list of argument names under a plural key ("keys": [...]) names
each of them; a "received" value that says nothing was sent ("undefined", "null") is no rejected
value and its "expected" a type, not a value; and a renamed argument is found through the sent
name's own documentation when the names share no word.

Every input is written for these tests and set at a community observatory (telescope slots,
star parties, the members' dark-sky site), a setting no domain or kit of the benchmark uses.
"""

from __future__ import annotations

import json

from causal_middleware.context.tool_errors import looks_like_error, renamed_argument, tool_error_delta


def _issues(*issues: dict[str, object]) -> str:
    return json.dumps({"name": "SchemaError", "issues": list(issues)})


UNKNOWN = {
    "code": "unrecognized_keys",
    "keys": ["scope_no"],
    "path": [],
    "message": "Unrecognized key(s) in object: 'scope_no'",
}
REQUIRED = {
    "code": "invalid_type",
    "expected": "string",
    "received": "undefined",
    "path": ["scopeId"],
    "message": "Required",
}


def test_a_serialised_exception_with_issues_is_an_error() -> None:
    assert looks_like_error(_issues(REQUIRED))
    assert looks_like_error(json.dumps({"type": "BookingException", "detail": "slot taken"}))
    # a name that is no exception class is no error
    assert not looks_like_error(json.dumps({"name": "Refractor 2", "slot": "21:00"}))


def test_an_unrecognised_key_and_a_missing_one_pair_up_in_either_order() -> None:
    args = json.dumps({"scope_no": "T-4", "night": "2026-08-12"})
    assert tool_error_delta(_issues(UNKNOWN, REQUIRED), args) == ("scopeId", "scope_no")
    assert tool_error_delta(_issues(REQUIRED, UNKNOWN), args) == ("scopeId", "scope_no")
    # the list of keys alone names the rejected argument, without the message
    bare = {"code": "unrecognized_keys", "keys": ["scope_no"], "path": []}
    assert tool_error_delta(_issues(bare, REQUIRED), args) == ("scopeId", "scope_no")


def test_received_undefined_is_no_rejected_value() -> None:
    args = json.dumps({"scope": "T-4"})
    expected, got = tool_error_delta(_issues(REQUIRED), args)
    assert got != "undefined" and expected != "string"
    # a real received value is still read as the one rejected
    wrong = {"code": "invalid_type", "expected": "number", "received": "T-4", "path": ["aperture"]}
    assert tool_error_delta(_issues(wrong), json.dumps({"aperture": "T-4"}))[1] == "T-4"


def test_a_renamed_argument_is_found_through_its_own_documentation() -> None:
    described = json.dumps(
        {
            "name": "book_slot",
            "description": "Book a telescope slot. Give the instrument as `mount_ref`.",
            "parameters": {
                "type": "object",
                "properties": {
                    "mount_ref": {"type": "string", "description": "The telescope's number, e.g. T-4."},
                    "night": {"type": "string"},
                },
            },
        },
        indent=2,
    )
    error = json.dumps({"error": {"message": "Required parameter: telescope_id", "location": "telescope_id"}})
    args = json.dumps({"mount_ref": "T-4", "night": "2026-08-12"})
    assert renamed_argument(error, args, described) == ("telescope_id", "mount_ref")
    # when no sent name's documentation shares a word with the required one, nothing is guessed
    error2 = json.dumps({"error": {"message": "Required parameter: dew_heater", "location": "dew_heater"}})
    assert renamed_argument(error2, args, described) == (None, None)


def test_did_you_just_asked_of_the_users_own_things_is_a_challenge() -> None:
    import re

    from causal_middleware.context.signal_patterns import _CHALLENGE

    challenge = re.compile(_CHALLENGE, re.IGNORECASE)
    assert challenge.search("Did you just post my home address to the whole group?")
    # a question about what the agent said, or about the agent's act on no thing of the user's, is not
    assert not challenge.search("Did you just say the star party starts at nine?")
    assert not challenge.search("Did you just book the slot?")
