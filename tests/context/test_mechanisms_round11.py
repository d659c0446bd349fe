"""Round 11 of issue 19: a protobuf validator's qualified field name and its parenthesised aside, a
bracketed space-separated allowed-value list, "why did you promise me ...?", a rate's head noun and a
short unit symbol as what a number counts, a source's "don't say" with no object as an absence
report, and a bare number labelled with the answer's own label word.

Every input is written for these tests and set at a community bike workshop (stand hire, repair
classes, parts), a setting no domain or kit of the benchmark uses.
"""

from __future__ import annotations

from context_generalise.chat import Chat

from causal_middleware.context.contradictions import counted_nouns
from causal_middleware.context.conversation import Conversation
from causal_middleware.context.delta import correction_delta, reports_absence
from causal_middleware.context.detector import detect_offline
from causal_middleware.context.signals import SignalType
from causal_middleware.context.tool_errors import _field_of, allowed_values, tool_error_delta
from causal_middleware.context.workspace import Workspace


def space() -> Workspace:
    return Workspace.from_files(
        {
            "system_prompt.md": "# Assistant of the Eastgate Bike Workshop\n\n- Answer from the workshop pages.\n",
            "kb/classes.md": "# Repair classes\n\nClasses take at most 6 riders per instructor.\n",
        }
    )


def chat(*turns: tuple[str, str]) -> Conversation:
    c = Chat(space(), "bikes")
    for role, text in turns:
        (c.user if role == "user" else c.agent)(text)
    conv: Conversation = c.build()
    return conv


def detected(conv: Conversation) -> set[str | None]:
    return {
        s.node_id
        for s in detect_offline(conv).signals
        if s.type in (SignalType.CORRECTION, SignalType.CLARIFICATION_REQUEST)
    }


def test_a_validators_qualified_required_field_and_its_aside() -> None:
    out = 'rpc error: code = InvalidArgument desc = invalid HireRequest.member_id: value is required (unknown field "member_no")'
    assert tool_error_delta(out, '{"member_no": "M-1182", "stand": "2"}') == ("member_id", "member_no")
    assert _field_of("HireRequest.member_id") == "member_id"
    # a dotted name without a type in front is kept whole
    assert _field_of("rider.email") == "rider.email"


def test_a_bracketed_space_separated_allowed_list() -> None:
    out = 'rpc error: code = InvalidArgument desc = invalid HireRequest.Bay: value must be in list [FRONT_BAY REAR_YARD], got "FRONT"'
    assert allowed_values(out) == ["FRONT_BAY", "REAR_YARD"]
    assert tool_error_delta(out, '{"bay": "FRONT", "days": "2"}') == ("FRONT_BAY", "FRONT")
    # one bracketed item is no list
    assert allowed_values("value must be in list [FRONT_BAY]") == []


def test_why_did_you_promise_me_challenges_the_answer() -> None:
    conv = chat(
        ("user", "Can I get my class fee back if I miss it?"),
        ("agent", "No problem, I'll make sure you get your money back."),
        ("user", "The desk said no, so why did you promise me a refund?"),
    )
    assert "n4" in detected(conv)
    assert detect_offline(conv).escalate
    quiet = chat(
        ("user", "Can I get my class fee back if I miss it?"),
        ("agent", "Fees are refunded up to 2 days before the class."),
        ("user", "Why did you close early yesterday?"),
    )
    assert detected(quiet) == set()


def test_a_rate_and_a_unit_symbol_name_what_is_counted() -> None:
    assert counted_nouns("Classes take at most 6 riders per instructor.") == {"rider": ("6", "6 riders")}
    assert counted_nouns("The hill climb rises 486 m in total.") == {"m": ("486", "486 m")}
    # an English word after a number is no unit symbol
    assert counted_nouns("I bought 5 in spring.") == {}
    conv = chat(
        ("user", "How big are the repair classes?"),
        ("agent", "Classes take at most 6 riders per instructor."),
        ("user", "Our class had exactly 8 riders and they said it was full."),
    )
    assert detected(conv) == {"n4"}
    conv = chat(
        ("user", "How much does the hill climb rise?"),
        ("agent", "The hill climb rises 486 m from the workshop."),
        ("user", "My bike computer said 684 m, and so does your route card."),
    )
    assert detected(conv) == {"n4"}


def test_a_sources_dont_say_reports_an_absence() -> None:
    assert reports_absence("Our workshop pages don't say, I'm afraid. Please ask at the counter.")
    assert not reports_absence("They don't say hello back when you wave.")
    conv = chat(
        ("user", "How late can I cancel a class for free?"),
        ("agent", "Our workshop pages don't say, I'm afraid. Please ask at the counter."),
        ("user", "It is 48 hours."),
    )
    assert detect_offline(conv).escalate
    kind, expected, _got, _ = correction_delta("It is 48 hours.", "Our workshop pages don't say, I'm afraid.")
    assert (kind, expected) == ("value", "48 hours")


def test_a_number_with_the_answers_own_label_is_disputed() -> None:
    answer = "The junior frames go up to size 36 at most."
    assert correction_delta("Are you sure? The price list says junior frames up to size 38.", answer)[:3] == (
        "value",
        "38",
        "36",
    )
    # another label: the doubt is about the answer as a whole
    assert correction_delta("Are you sure? The price list says locker 38.", answer)[0] == "behaviour"


def test_another_value_set_against_the_answer_with_which_one_is_it() -> None:
    answer = "The autumn tune-up course starts on 5 October 2026."
    conv = chat(
        ("user", "When does the autumn tune-up course start?"),
        ("agent", answer),
        ("user", "We booked our leave around the start, 12 October 2026. Which one is it?"),
    )
    assert "n4" in {s.node_id for s in detect_offline(conv).signals if s.type == SignalType.CORRECTION}
    assert detect_offline(conv).escalate
    # the answer's own value named back, or no value at all: nothing is disputed
    for reply in (
        "So it starts 5 October 2026, which one is it for the evening group?",
        "Thanks, see you then.",
    ):
        quiet = chat(
            ("user", "When does the autumn tune-up course start?"), ("agent", answer), ("user", reply)
        )
        assert not {s for s in detect_offline(quiet).signals if s.type == SignalType.CORRECTION}, reply
