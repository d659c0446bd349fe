"""Round 5 of issue 19: mechanisms that read a session's structure rather than its phrasing.

Every input is written for these tests and set at a coworking space's front desk (desks, meeting
rooms, lockers, printing), a setting no domain or kit of the benchmark uses. Each test holds one
mechanism: information questions and requests are not corrections, a repair marks the turn it
looks back to as a question, a free relative is no rejected value, codes and house numbers are no
quantities, units and clock times compare by what they mean, a structured tool error is read by
what it says of each argument (JSON items, XML, key=value, messages filed under a name), and the
agent's own acts and commitments are what a value-less objection disputes.
"""

from __future__ import annotations

import json

from context_generalise.chat import Chat

from causal_middleware.context.conversation import Conversation, ConversationNode, NodeType
from causal_middleware.context.delta import correction_delta
from causal_middleware.context.detector import detect_offline
from causal_middleware.context.recommendation import Operation
from causal_middleware.context.recommender import recommend
from causal_middleware.context.root_cause import FaultCategory, diagnose
from causal_middleware.context.segmenter import segment
from causal_middleware.context.signals import SignalType
from causal_middleware.context.text import find_values, same_value
from causal_middleware.context.tool_errors import tool_error_delta
from causal_middleware.context.workspace import Workspace

PROMPT = "# Front desk of the Dockside coworking space\n\nRules:\n- Answer from the house pages.\n"
LOCKERS = "---\ntitle: Lockers\n---\n# Lockers\n\nA locker is free for the first 30 days of a membership.\n"
PRINTING = "---\ntitle: Printing\n---\n# Printing\n\nBlack and white printing costs 10 cents a page.\n"
TOOL = (
    "# book_desk\n\nBooks a hot desk for a member.\n\nArguments: `member_id` (the member number), "
    "`desk_no` (the desk), `day` (YYYY-MM-DD).\n"
)


def space() -> Workspace:
    return Workspace.from_files(
        {
            "system_prompt.md": PROMPT,
            "kb/facilities/lockers.md": LOCKERS,
            "kb/services/printing.md": PRINTING,
            "tools/book_desk.md": TOOL,
        }
    )


def corrections(conv: Conversation) -> set[str | None]:
    return {s.node_id for s in detect_offline(conv).signals if s.type == SignalType.CORRECTION}


def chat(*turns: tuple[str, str]) -> Conversation:
    c = Chat(space(), "desk")
    for role, text in turns:
        (c.user if role == "user" else c.agent)(text)
    conv: Conversation = c.build()
    return conv


BOOK = ("user", "Can you book me a desk for Monday?")


# --- questions and requests are not corrections ------------------------------------------------


def test_a_question_that_asks_for_a_fact_is_no_correction_whatever_modal_it_holds() -> None:
    for question in (
        "we start on monday, how much notice do you need to give us a key card?",
        "great. from what time can't guests come in on weekends?",
        "one more thing: at what hour do you have to leave the building?",
    ):
        conv = chat(BOOK, ("agent", "Desk 12 is yours on Monday."), ("user", question))
        assert "n4" not in corrections(conv), question
    # the same modal in a statement still corrects
    conv = chat(
        BOOK, ("agent", "Desk 12 is yours on Monday."), ("user", "you need to ask for my member number first")
    )
    assert "n4" in corrections(conv)


def test_a_request_put_to_the_agent_is_no_correction_but_a_challenge_still_is() -> None:
    conv = chat(
        BOOK,
        ("agent", "Desk 12 is yours on Monday."),
        ("user", "could you promise me you won't give it away?"),
    )
    assert "n4" not in corrections(conv)
    conv = chat(BOOK, ("agent", "Desk 12 is yours on Monday."), ("user", "can you even promise that?"))
    assert "n4" in corrections(conv)


def test_nothing_before_the_first_answer_can_be_a_correction() -> None:
    conv = chat(("user", "you should have a printer on the second floor, where exactly is it?"))
    assert corrections(conv) == set()


def test_a_question_read_as_a_follow_up_only_by_its_modal_opens_a_new_segment() -> None:
    conv = chat(
        ("user", "How long is a locker free?"),
        ("agent", "A locker is free for the first 30 days."),
        ("user", "from what date can't you lock the bike room at night?"),
    )
    segments = segment(conv)
    assert len(segments) == 2
    assert "n4" in segments[1].node_ids


def test_a_repair_marks_the_turn_it_looks_back_to_as_a_question() -> None:
    conv = chat(
        ("user", "How long is a locker free?"),
        ("agent", "A locker is free for the first 30 days."),
        ("user", "Why do you charge members extra just to print next to the lockers?"),
        ("agent", "A locker is free for the first 30 days of a membership."),
        ("user", "that's not what I asked. I meant printing, it's 10 cents a page"),
    )
    assert corrections(conv) == {"n6"}


# --- values: what is said, what is a code, what a unit means -----------------------------------


def test_what_a_source_says_is_the_source_not_the_rejected_value() -> None:
    answer = "Quiet hours start at 9 pm."
    for correction in (
        "that's not what the house rules say, they say 10 pm",
        "hmm, not what the sign on the door reads, it reads 10 pm",
    ):
        assert correction_delta(correction, answer) == ("value", "10 pm", "9 pm", None), correction


def test_codes_and_house_numbers_are_not_quantities() -> None:
    assert find_values("member M-30155, card 4410-2290, call 555-0187") == []
    assert find_values("I live at 14 Harbour Street") == []
    assert find_values("I need 14 desks") == [("number", "14")]
    conv = chat(
        ("user", "How long is a locker free?"),
        ("agent", "A locker is free for the first 30 days."),
        ("user", "Thanks. My badge M-30155 shows 48213 on the back."),
    )
    assert corrections(conv) == set()


def test_a_bare_number_takes_the_answers_unit_only_where_it_states_the_answers_value() -> None:
    answer = ("agent", "The day pass costs $25.")
    for complaint in ("no, it's 30", "it went up to 30", "30, not 25"):
        assert "n4" in corrections(chat(BOOK, answer, ("user", complaint))), complaint
    # a number that counts something else ("lists 3 items") keeps no unit of the answer's
    assert "n4" not in corrections(chat(BOOK, answer, ("user", "the day pass receipt lists 3 items")))


def test_a_turn_that_opens_with_a_new_request_states_no_contradiction() -> None:
    conv = chat(
        BOOK,
        ("agent", "Late payments carry a 2% fee."),
        ("user", "can I give you my badge number? the card says 48213"),
    )
    assert corrections(conv) == set()


def test_units_compare_by_what_they_measure() -> None:
    assert find_values("keep bikes 3 feet from the door") == [("measure", "3 feet")]
    assert find_values("the booth is kept at 21°C") == [("measure", "21°C")]
    assert find_values("the heater draws 2 kW") == [("measure", "2 kW")]
    assert find_values("about 7 grains per gallon, 120 mg/L") == [
        ("measure", "7 grains per gallon"),
        ("measure", "120 mg/L"),
    ]
    assert same_value("1 yard", "3 feet") and not same_value("18°C", "21°C")
    assert not same_value("120 mg/L", "120 mg")
    conv = chat(
        ("user", "How warm is the phone booth kept?"),
        ("agent", "We keep it at 21°C."),
        ("user", "the thermostat in there shows 18°C"),
    )
    assert "n4" in corrections(conv)


def test_a_clock_time_without_am_or_pm_is_the_same_time_as_with_it() -> None:
    assert same_value("9:30", "9:30 pm") and same_value("21:30", "9:30 pm") and same_value("6 pm", "6:00 pm")
    assert not same_value("9:30", "10:30 pm") and not same_value("9 am", "9 pm")
    # quoting the agent's own time back is citing it, not stating a new one
    kind, expected, _, _ = correction_delta(
        "you said 9:30 and I was locked out until 11", "The doors open at 9:30 am."
    )
    assert kind == "behaviour" and expected != "9:30"


# --- tool errors, read by what they say of each argument ---------------------------------------

CALL = json.dumps({"member_id": "M-301", "desk_no": "D14", "day": "2026-03-02"})


def test_a_structured_error_is_read_item_by_item_whatever_its_format() -> None:
    errors = {
        "validation items": '{"detail": [{"type": "extra_forbidden", "loc": ["body", "desk_no"], "msg": "Extra '
        'inputs are not permitted", "input": "D14"}, {"type": "missing", "loc": ["body", "desk_id"], '
        '"msg": "Field required", "input": null}]}',
        "param and message": '{"error": {"code": "parameter_unknown", "param": "desk_no", "message": '
        '"Received unknown parameter: desk_no. Required parameters: member_id, desk_id, day"}}',
        "schema keywords": '[{"keyword": "additionalProperties", "params": {"additionalProperty": "desk_no"}, '
        '"message": "must NOT have additional properties"}, {"keyword": "required", "params": '
        '{"missingProperty": "desk_id"}, "message": "must have required property desk_id"}]',
        "messages under names": '{"errors": {"desk_no": ["is not a permitted parameter"], "desk_id": ["can\'t be blank"]}}',
        "problem details": '{"title": "Bad Request", "invalid_params": [{"name": "desk_no", "reason": "unknown '
        'parameter"}, {"name": "desk_id", "reason": "is required"}]}',
    }
    for shape, error in errors.items():
        assert tool_error_delta(error, CALL) == ("desk_id", "desk_no"), shape


def test_xml_and_key_value_errors_are_read_by_field() -> None:
    xml = (
        '<?xml version="1.0"?><Response><Errors><Error><Code>UnknownParameter</Code><Message>The parameter '
        "desk_no is not recognized</Message></Error><Error><Code>MissingParameter</Code><Message>The request "
        "must contain the parameter desk_id</Message></Error></Errors></Response>"
    )
    assert tool_error_delta(xml, CALL) == ("desk_id", "desk_no")
    assert tool_error_delta('level=error msg="unknown field" field=desk_no expected=desk_id', CALL) == (
        "desk_id",
        "desk_no",
    )
    room = json.dumps({"member_id": "M-301", "room": "BOARDROOM"})
    kv = 'error=invalid_value field=room value=BOARDROOM allowed="BOARD_ROOM,PHONE_BOOTH,STUDIO"'
    assert tool_error_delta(kv, room) == ("BOARD_ROOM", "BOARDROOM")
    # an unknown value of a field is about the value, not the field
    literal = "{'field': 'room', 'error': 'unknown room', 'allowed': ['BOARD_ROOM', 'STUDIO']}"
    assert tool_error_delta(literal, room) == ("BOARD_ROOM", "BOARDROOM")


def test_a_rejected_argument_name_leads_to_the_tool_description_end_to_end() -> None:
    ws = space()
    error = (
        '{"detail": [{"type": "extra_forbidden", "loc": ["body", "desk_no"], "msg": "Extra inputs are not '
        'permitted", "input": "D14"}, {"type": "missing", "loc": ["body", "desk_id"], "msg": "Field required"}]}'
    )
    c = Chat(ws, "desk").user("Book desk D14 for me on 2 March, member M-301.")
    c.nodes.append(
        ConversationNode(
            id=f"n{len(c.nodes) + 1}",
            type=NodeType.TOOL_CALL,
            turn=c.turn,
            name="book_desk",
            content=CALL,
            output=error,
            status="error",
        )
    )
    conv = c.agent("Sorry, that didn't go through.").user("so is my desk booked or not?").build()
    diag = diagnose(conv, detect_offline(conv))
    assert diag.category == FaultCategory.TOOL_PROMPT_ERROR and diag.component_path == "tools/book_desk.md"
    rec = recommend(conv, diag, ws)
    assert rec.operation == Operation.UPDATE and rec.target_path == "tools/book_desk.md"
    assert "`desk_id`" in (rec.new_text or "") and "`desk_no`" not in (rec.new_text or "")


# --- the agent's own acts and commitments ------------------------------------------------------


def test_a_persisting_state_or_a_yes_or_no_challenge_disputes_what_the_agent_said_it_did() -> None:
    answer = ("agent", "I've reserved desk 12 for you on Monday.")
    for complaint in ("the app still shows desk 12 as free though", "so is it reserved or not?"):
        assert "n4" in corrections(chat(BOOK, answer, ("user", complaint))), complaint
    # the same words after an answer that reports no act are no dispute
    fact = ("agent", "Desks are released at noon if nobody checks in.")
    assert "n4" not in corrections(chat(BOOK, fact, ("user", "I still need a desk for Tuesday too")))


def test_a_valueless_objection_to_an_agent_act_roots_at_the_system_prompt() -> None:
    conv = chat(
        ("user", "Can you waive this month's locker fee?"),
        ("agent", "Done, I've waived the locker fee on your account."),
        ("user", "wait, can a chat assistant actually waive fees? that doesn't seem right"),
    )
    diag = diagnose(conv, detect_offline(conv))
    assert diag.delta is not None and diag.delta.kind == "behaviour"
    assert diag.category == FaultCategory.SYSTEM_PROMPT_GAP
    rec = recommend(conv, diag, space())
    assert rec.operation == Operation.UPDATE and rec.target_path == "system_prompt.md"


def test_a_rhetorical_how_can_you_with_even_objects_whatever_its_object() -> None:
    conv = chat(
        BOOK,
        ("agent", "The meeting room will be ready at 9 am."),
        ("user", "how can you promise a time when the cleaners aren't even in yet"),
    )
    assert "n4" in corrections(conv)


def test_a_reply_that_states_a_value_reports_no_absence_whatever_negation_it_holds() -> None:
    conv = chat(
        ("user", "Is there a deposit for a locker key?"),
        ("agent", "Members who don't have a direct debit pay a $20 key deposit."),
        ("user", "I'm moving in on the 3rd. It's Ana Ruiz, desk 7."),
    )
    assert corrections(conv) == set()


def test_who_authorised_it_and_a_fault_named_by_its_verb_are_objections() -> None:
    answer = ("agent", "I've moved your booking to room C at 2 pm.")
    for complaint in (
        "who said you could change my booking?",
        "you've double-booked me, someone else is in room C",
        "you overcharged us for the room",
    ):
        assert "n4" in corrections(chat(BOOK, answer, ("user", complaint))), complaint
    assert "n4" not in corrections(chat(BOOK, answer, ("user", "who should I ask about parking?")))


def test_a_fact_set_against_the_agents_act_with_though_disputes_it() -> None:
    answer = ("agent", "I've moved your booking to room C at 2 pm.")
    assert "n4" in corrections(chat(BOOK, answer, ("user", "room C is being painted this week though")))
    # about something the act did not concern, it disputes nothing
    assert "n4" not in corrections(chat(BOOK, answer, ("user", "parking is tight on fridays though")))


def test_a_tool_output_is_an_error_by_its_body_whatever_its_status() -> None:
    from causal_middleware.context.tool_errors import looks_like_error

    for error in (
        '{"detail": [{"type": "missing", "loc": ["body", "desk_id"], "msg": "Field required"}]}',
        "<Fault><faultcode>Client</faultcode><faultstring>bad room</faultstring></Fault>",
        'level=error msg="unknown field" field=desk_no',
        '{"ok": false, "reason": "room_code must be one of A, B"}',
        '{"status": 422, "title": "Unprocessable"}',
        "REJECTED: DESK NUMBER FORMAT",
    ):
        assert looks_like_error(error), error
    for fine in (
        '{"booking_id": "B-1", "status": "confirmed"}',
        '{"errors": []}',
        "Booked desk 12 for Monday.",
    ):
        assert not looks_like_error(fine), fine
    c = Chat(space(), "desk").user("Book desk D14 for Monday please.")
    c.nodes.append(
        ConversationNode(
            id=f"n{len(c.nodes) + 1}",
            type=NodeType.TOOL_CALL,
            turn=c.turn,
            name="book_desk",
            content=CALL,
            output='{"ok": false, "errors": [{"param": "desk_no", "message": "unknown parameter"}]}',
        )
    )
    conv = c.agent("Done!").build()
    assert any(s.type == SignalType.TOOL_EXECUTION_ERROR for s in detect_offline(conv).signals)


def test_the_users_own_past_experience_of_a_value_contradicts_the_answer() -> None:
    answer = ("agent", "The day pass costs $25.")
    for complaint in ("last week I paid $30 for one", "hm, I've always been charged $30"):
        assert "n4" in corrections(chat(BOOK, answer, ("user", complaint))), complaint
    # told to set the scene for a question, or as a plan, it is no contradiction
    assert "n4" not in corrections(
        chat(BOOK, answer, ("user", "I paid $30 for a locker last time, is that still right?"))
    )
    assert "n4" not in corrections(chat(BOOK, answer, ("user", "I usually spend $30 a day on coffee")))


def test_a_bare_number_after_a_clock_time_names_an_hour() -> None:
    answer = "Quiet hours start at 9 pm."
    assert correction_delta("the poster by the lifts says 10", answer) == ("value", "10 pm", "9 pm", None)
    conv = chat(
        ("user", "When do quiet hours start?"), ("agent", answer), ("user", "the poster by the lifts says 10")
    )
    assert "n4" in corrections(conv)


def test_a_reply_about_its_own_sources_states_absence_wherever_the_pronoun_sits() -> None:
    for gap in ("That isn't something I have details on.", "No info on that in my sources, unfortunately."):
        c = (
            Chat(space(), "desk")
            .user("How late can I stay in the building?")
            .search("late access building hours")
        )
        conv = c.agent(gap).user("Reception told me it's 11 pm.").build()
        assert "n5" in corrections(conv), gap


def test_numbers_written_as_words_and_day_first_dates_are_values() -> None:
    assert find_values("it takes two hours and costs thirty dollars") == [
        ("duration", "two hours"),
        ("money", "thirty dollars"),
    ]
    assert same_value("twenty-five minutes", "25 minutes") and same_value("ten percent", "10%")
    assert find_values("from 15 December") == [("date", "15 December")]
    assert same_value("15 December", "Dec 15th") and not same_value("15 December", "Dec 16")
    kind, expected, got, _ = correction_delta(
        "pretty sure the app says thirty dollars", "The day pass costs $25."
    )
    assert (kind, got) == ("value", "$25") and same_value(expected, "$30")


def test_tool_errors_in_more_back_end_dialects_are_read() -> None:
    errors = {
        "rpc": 'rpc error: code = InvalidArgument desc = unknown field "desk_no", expected "desk_id"',
        "yaml": "error:\n  field: desk_no\n  reason: unknown field\n  hint: use desk_id",
        "binding": 'com.example.BindException: Unrecognized field "desk_no" (class Booking), not marked as '
        'ignorable (3 known properties: "member_id", "desk_id", "day"])',
    }
    from causal_middleware.context.tool_errors import looks_like_error

    for dialect, error in errors.items():
        assert looks_like_error(error), dialect
        assert tool_error_delta(error, CALL) == ("desk_id", "desk_no"), dialect
    room = json.dumps({"member_id": "M-301", "room": "BOARDROOM"})
    assert tool_error_delta(
        "400 invalid room BOARDROOM; valid rooms: BOARD_ROOM;PHONE_BOOTH;STUDIO", room
    ) == (
        "BOARD_ROOM",
        "BOARDROOM",
    )


def test_an_echo_of_the_agents_act_as_a_verbless_question_disputes_it() -> None:
    answer = ("agent", "I've emailed your full card number to the billing team.")
    for echo in ("my whole card number in an email?", "the full card number??"):
        assert "n4" in corrections(chat(BOOK, answer, ("user", echo))), echo
    for question in ("thanks, and the billing team will call me?", "brilliant, what's the card for?"):
        assert "n4" not in corrections(chat(BOOK, answer, ("user", question))), question


def test_a_plan_or_request_after_a_negative_answer_supplies_no_answer_but_a_framed_claim_does() -> None:
    for question, answer, follow_up in (
        (
            "Do you have showers?",
            "We don't have showers, but the gym next door sells day passes.",
            "ok, I'll book the gym for 2 hours then",
        ),
        (
            "Can I bring my dog?",
            "I'm afraid dogs aren't allowed in the building.",
            "fair enough. I need a desk for 3 days next week.",
        ),
    ):
        assert corrections(chat(("user", question), ("agent", answer), ("user", follow_up))) == set(), (
            follow_up
        )
    for claim in ("I think they close at 11 pm.", "I'm pretty sure it's 11 pm.", "My contract says 11 pm."):
        c = (
            Chat(space(), "desk")
            .user("How late can I stay in the building?")
            .search("late access building hours")
        )
        conv = c.agent("Sorry, I couldn't find anything on late access.").user(claim).build()
        assert "n5" in corrections(conv), claim
