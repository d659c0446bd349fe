"""Round 12 of issue 19: an error body's own type codes read as no argument name, a correction that
repeats the answer's words and goes on with another value (a phrase, a labelled code, a number, an
ordinal), a subject of more than four words before "is", and "how can you know ...?" as pushback.

Every input is written for these tests and set at a community pottery studio (kiln firings, wheel
hire, glaze classes), a setting no domain or kit of the benchmark uses.
"""

from __future__ import annotations

from context_generalise.chat import Chat

from causal_middleware.context.conversation import Conversation
from causal_middleware.context.delta import correction_delta
from causal_middleware.context.detector import detect_offline
from causal_middleware.context.signals import SignalType
from causal_middleware.context.text import contains
from causal_middleware.context.tool_errors import tool_error_delta
from causal_middleware.context.workspace import Workspace


def space() -> Workspace:
    return Workspace.from_files(
        {
            "system_prompt.md": "# Assistant of the Millbrook Pottery Studio\n\n- Answer from the studio pages.\n",
            "kb/firing.md": "# Kiln firings\n\nBisque firings run on Tuesdays; pieces are collected from Shelf C.\n",
        }
    )


def chat(*turns: tuple[str, str]) -> Conversation:
    c = Chat(space(), "pottery")
    for role, text in turns:
        (c.user if role == "user" else c.agent)(text)
    conv: Conversation = c.build()
    return conv


def corrections(conv: Conversation) -> set[str | None]:
    return {s.node_id for s in detect_offline(conv).signals if s.type == SignalType.CORRECTION}


def test_an_error_items_type_codes_name_no_argument() -> None:
    # each item names its field under "loc" and classifies itself under "type" with a dotted code:
    # the code is no second missing argument, so the one missing field is what was meant
    out = (
        'HTTP 422 {"detail": [{"loc": ["body", "glaze_code"], "msg": "field required", "type": '
        '"type_error.absent"}, {"loc": ["body", "glaze"], "msg": "extra fields not permitted", '
        '"type": "type_error.surplus"}]}'
    )
    assert tool_error_delta(out, '{"glaze": "CELADON", "booking": "PB-771"}') == ("glaze_code", "glaze")
    # a code filed as the error's "code" is no argument either
    out2 = '{"errors": [{"field": "kiln_slot", "code": "missing_value.required", "message": "kiln_slot is required"}, {"field": "slot", "code": "unknown.field", "message": "unknown field"}]}'
    assert tool_error_delta(out2, '{"slot": "3", "booking": "PB-771"}') == ("kiln_slot", "slot")


def test_the_answers_words_refilled_with_another_phrase() -> None:
    answer = "Sure, finished pots can be collected after the glaze firing"
    kind, expected, got, _ = correction_delta(
        "That's wrong, pots are collected after the bisque cooling.", answer
    )
    assert (kind, expected, got) == ("value", "bisque cooling", "glaze firing")


def test_a_labelled_code_refilled() -> None:
    answer = "Your fired pieces are waiting on Shelf D, next to the wheel room."
    kind, expected, got, _ = correction_delta(
        "I picked mine up from Shelf C last week, they're always there.", answer
    )
    assert (kind, expected, got) == ("value", "Shelf C", "Shelf D")
    # and with an explicit "are in ..." phrase the code, not the phrase, is the value
    kind, expected, got, _ = correction_delta("No, the pieces are on Shelf C, I saw the sign.", answer)
    assert (kind, expected, got) == ("value", "Shelf C", "Shelf D")


def test_a_refilled_code_is_detected_without_cue_words() -> None:
    conv = chat(
        ("user", "Where do I collect my fired pieces?"),
        ("agent", "Your fired pieces are waiting on Shelf D, next to the wheel room."),
        ("user", "I picked mine up from Shelf C last week, they're always there."),
    )
    assert "n4" in corrections(conv) or any(
        s.type == SignalType.CORRECTION and "Shelf C" in s.evidence for s in detect_offline(conv).signals
    )
    # a want states no value
    calm = chat(
        ("user", "Where do I collect my fired pieces?"),
        ("agent", "Your fired pieces are waiting on Shelf D, next to the wheel room."),
        ("user", "Thanks. Next time I want Shelf C if it is free."),
    )
    assert not any(s.type == SignalType.CORRECTION for s in detect_offline(calm).signals)


def test_a_refilled_number_is_a_value_whatever_else_the_turn_says() -> None:
    # "read the notice" alone would make it a behavioural objection; the answer's own words
    # ("wheels under") with another number make it a disputed value
    answer = "Wheels under 12 must be booked a day ahead."
    kind, expected, got, _ = correction_delta(
        "It's wheels under 10 that must be booked ahead, read the notice.", answer
    )
    assert (kind, expected, got) == ("value", "10", "12")


def test_a_refilled_ordinal() -> None:
    answer = "glazing is allowed from the second tutorial of the course"
    kind, expected, got, _ = correction_delta(
        "My tutor said the course allows glazing from the fourth tutorial.", answer
    )
    assert (kind, expected, got) == ("value", "fourth", "second")


def test_a_long_subject_before_is() -> None:
    answer = "I couldn't find anything about that in the studio pages."
    kind, expected, _, _ = correction_delta(
        "As far as I know the cooling time for the big gas kiln is two days.", answer
    )
    assert (kind, expected) == ("value", "two days")
    kind, expected, _, _ = correction_delta(
        "As far as I know the firing that suits stoneware mugs is reduction.", answer
    )
    assert (kind, expected) == ("value", "reduction")


def test_how_can_you_know_is_pushback() -> None:
    conv = chat(
        ("user", "Will a wheel come free if I wait in the studio?"),
        ("agent", "Yes, a wheel always comes free, just wait a bit."),
        ("user", "How can you know a wheel will come free?"),
    )
    assert "n4" in corrections(conv)
    # asking how to find something out is no pushback
    asked = chat(
        ("user", "Will a wheel come free if I wait in the studio?"),
        ("agent", "Wheels are booked in hourly slots."),
        ("user", "How do you know which slots are free?"),
    )
    assert "n4" not in corrections(asked)


def test_a_number_inside_a_longer_number_is_not_carried() -> None:
    # a search result's score ("score": 6.42) does not bring in the value 6
    assert not contains('[{"path": "kb/firing.md", "score": 6.42, "content": "Bisque firings"}]', "6")
    assert not contains("the kiln holds 1,600 tiles", "600")
    assert contains("the kiln holds 6 shelves.", "6")
    assert contains("a firing takes 6.5 hours", "6.5")


def test_a_code_the_user_holds_is_their_own_case() -> None:
    conv = chat(
        ("user", "Where do I collect my fired pieces?"),
        ("agent", "Your fired pieces are waiting on Shelf D, next to the wheel room."),
        ("user", "I have Shelf C on my locker card, is that the same room?"),
    )
    assert "n4" not in corrections(conv)


def test_a_relayed_price_in_the_answers_words_is_a_correction() -> None:
    conv = chat(
        ("user", "What does a ten-firing card cost?"),
        ("agent", "A ten-firing card costs CHF 95 at the front desk."),
        ("user", "My sister bought one on Friday for CHF 88."),
    )
    assert "n4" in corrections(conv)


def test_a_refill_after_another_subject_is_not_the_answers_value() -> None:
    # the words before the shared frame name another subject ("evening" against "morning" class):
    # no refill; the same subject in another word form ("open" / "opened") is still one
    answer = "The morning class fee is 30 euros."
    assert correction_delta("no. the evening class fee is 45", answer)[1] != "45 euros"
    kind, expected, got, _ = correction_delta(
        "The studio notice says they open the kiln from the fourth week.",
        "the kiln is opened from the second week",
    )
    assert kind == "value" and "fourth" in (expected or "") and "second" in (got or "")
