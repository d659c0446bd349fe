"""Round 8 of issue 19: tool errors in dialects whose expected value is read from their structure
(space-separated codes after a label, XML binders' "Expected elements are <a>,<b>", bracketed sets,
slash runs, SOAP 1.2 codes, XML attributes), a belief held before set against the answer, a repair
that says the answer was about another thing, a labelled number, and turns that must stay quiet (a
new question that sets its own scene, a request the agent acted on, a duration that dates an event).

Every input is written for these tests and set at a marina (berths, the slipway, the fuel dock,
winter storage), a setting no domain or kit of the benchmark uses. Each test holds one mechanism,
with controls that must stay quiet.
"""

from __future__ import annotations

import json

from context_generalise.chat import Chat

from causal_middleware.context.conversation import Conversation, ConversationNode, NodeType
from causal_middleware.context.delta import correction_delta
from causal_middleware.context.detector import detect_offline
from causal_middleware.context.error_bodies import structured
from causal_middleware.context.objections import prior_belief
from causal_middleware.context.recommendation import Operation
from causal_middleware.context.recommender import recommend
from causal_middleware.context.root_cause import FaultCategory, diagnose
from causal_middleware.context.signals import SignalType
from causal_middleware.context.tool_errors import allowed_values, tool_error_delta
from causal_middleware.context.workspace import Workspace

PROMPT = "# Harbour office assistant of Kestrel Point marina\n\nRules:\n- Answer from the help pages.\n"
FUEL = "---\ntitle: Fuel dock\n---\n# Fuel dock\n\nThe fuel dock is open from 08:00 to 18:00 every day.\n"
STORAGE = (
    "---\ntitle: Applying for winter storage\n---\n# Applying for winter storage\n\n"
    "The yard office sends a storage decision within three working days of a complete application.\n"
)
FEES = (
    "---\ntitle: Berth fees\n---\n# Berth fees\n\nBerth holders with an approved account pay berth fees "
    "on net 30 terms.\n"
)
TOOL = (
    "# reserve_berth\n\nReserves a berth. Arguments:\n  boat_ref   the boat's registration\n"
    "  season     one of:\n    SUMMER_BERTH   April to September\n    WINTER         October to March\n"
    "    VISITOR        up to 7 nights\n"
)
ARGS = json.dumps({"boat_ref": "KP-4410", "season": "WINTER"})
ERROR = (
    "MRB0311E SEASON 'WINTER' NOT FOUND IN TABLE SEASONS. VALID VALUES: SUMMER_BERTH WINTER_BERTH "
    "VISITOR. BERTH NOT RESERVED."
)


def space() -> Workspace:
    return Workspace.from_files(
        {
            "system_prompt.md": PROMPT,
            "kb/fuel-dock.md": FUEL,
            "kb/winter-storage.md": STORAGE,
            "kb/berth-fees.md": FEES,
            "tools/reserve_berth.md": TOOL,
        }
    )


def corrections(conv: Conversation) -> set[str | None]:
    return {s.node_id for s in detect_offline(conv).signals if s.type == SignalType.CORRECTION}


def chat(*turns: tuple[str, str]) -> Conversation:
    c = Chat(space(), "marina")
    for role, text in turns:
        (c.user if role == "user" else c.agent)(text)
    conv: Conversation = c.build()
    return conv


def after(answer: str, reply: str, question: str = "How does it work?") -> Conversation:
    return chat(("user", question), ("agent", answer), ("user", reply))


# --- tool errors ---------------------------------------------------------------------------------


def test_codes_joined_by_spaces_after_a_label_are_a_list() -> None:
    assert allowed_values(ERROR) == ["SUMMER_BERTH", "WINTER_BERTH", "VISITOR"]
    assert tool_error_delta(ERROR, ARGS) == ("WINTER_BERTH", "WINTER")
    # "VALID VALUES ARE:" and command-language special values keep their mark
    assert allowed_values("SEASON WINTER NOT VALID. VALID VALUES ARE: SUMMER_BERTH VISITOR") == [
        "SUMMER_BERTH",
        "VISITOR",
    ]
    assert allowed_values(
        "Value WINTER for parameter SEASON not valid. Valid values are *SUMMER *VISITOR."
    ) == [
        "*SUMMER",
        "*VISITOR",
    ]
    # a sentence in prose after a label is no list
    assert allowed_values("Valid values: see the harbour handbook for the list.") == []


def test_the_tool_description_is_fixed_from_a_legacy_message_end_to_end() -> None:
    ws = space()
    c = Chat(ws, "marina").user("Book a winter berth for KP-4410 please.")
    c.nodes.append(
        ConversationNode(
            id=f"n{len(c.nodes) + 1}",
            type=NodeType.TOOL_CALL,
            turn=c.turn,
            name="reserve_berth",
            content=ARGS,
            output=ERROR,
            status="error",
        )
    )
    conv = c.agent("Sorry, that didn't go through.").user("so is it booked or not?").build()
    diag = diagnose(conv, detect_offline(conv))
    assert diag.category == FaultCategory.TOOL_PROMPT_ERROR
    rec = recommend(conv, diag, ws)
    assert rec.operation == Operation.UPDATE and rec.target_path == "tools/reserve_berth.md"
    assert rec.change_text == "replace 'WINTER' with 'WINTER_BERTH'"
    assert "SUMMER_BERTH WINTER_BERTH" not in (rec.new_text or "")


def test_an_xml_binders_expected_elements() -> None:
    args = json.dumps({"hull_no": "KP-4410"})
    fault = (
        '<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><soap:Fault>'
        "<faultcode>soap:Client</faultcode><faultstring>Unmarshalling Error: unexpected element "
        '(uri:"", local:"hull_no"). Expected elements are &lt;boat_ref&gt;,&lt;berth&gt;</faultstring>'
        "</soap:Fault></soap:Body></soap:Envelope>"
    )
    assert allowed_values(fault) == ["boat_ref", "berth"]
    assert tool_error_delta(fault, args) == (None, "hull_no")
    # the names qualified by a namespace, whose dots are no sentence end
    qualified = (
        'unexpected element (uri:"http://kp.example/v2", local:"hull_no"). Expected elements are '
        "<{http://kp.example/v2}boat_ref>,<{http://kp.example/v2}berth>"
    )
    assert allowed_values(qualified) == ["boat_ref", "berth"]
    # a name sharing a word with the one sent stands out
    ref = json.dumps({"boat_no": "KP-4410"})
    assert tool_error_delta(fault.replace("hull_no", "boat_no"), ref) == ("boat_ref", "boat_no")


def test_sets_in_brackets_braces_and_slash_runs() -> None:
    args = json.dumps({"season": "WINTER"})
    xsd = (
        "cvc-enumeration-valid: Value 'WINTER' is not facet-valid with respect to enumeration "
        "'[SUMMER_BERTH, WINTER_BERTH, VISITOR]'. It must be a value from the enumeration."
    )
    # "-valid:" inside the validator's code labels nothing
    assert allowed_values(xsd) == ["SUMMER_BERTH", "WINTER_BERTH", "VISITOR"]
    assert tool_error_delta(xsd, args) == ("WINTER_BERTH", "WINTER")
    element = (
        "Invalid content was found starting with element 'hull_no'. One of '{boat_ref, berth}' is expected."
    )
    assert allowed_values(element) == ["boat_ref", "berth"]
    assert allowed_values("MRB0042E INVALID SEASON 'WINTER'. VALID: SUMMER_BERTH/WINTER_BERTH/VISITOR") == [
        "SUMMER_BERTH",
        "WINTER_BERTH",
        "VISITOR",
    ]


def test_the_first_of_a_quoted_list_is_not_the_expected_value() -> None:
    args = json.dumps({"season": "WINTER"})
    out = (
        "1 validation error for Berth\nseason\n  Input should be 'SUMMER_BERTH', 'WINTER_BERTH' or 'VISITOR'"
    )
    assert tool_error_delta(out, args) == ("WINTER_BERTH", "WINTER")
    # one quoted value after "should be" is the expected one
    assert tool_error_delta("Season 'WINTER' not known, should be 'WINTER_BERTH'", args) == (
        "WINTER_BERTH",
        "WINTER",
    )


def test_soap_12_codes_and_xml_attributes() -> None:
    args = json.dumps({"boat_ref": "KP-4410", "season": "WINTER"})
    fault = (
        '<env:Envelope xmlns:env="http://www.w3.org/2003/05/soap-envelope"><env:Body><env:Fault><env:Code>'
        '<env:Value>env:Sender</env:Value></env:Code><env:Reason><env:Text xml:lang="en">Invalid season '
        "'WINTER'; allowed values: SUMMER_BERTH, WINTER_BERTH</env:Text></env:Reason></env:Fault></env:Body>"
        "</env:Envelope>"
    )
    # the fault's own <Value> is not what the call sent
    assert tool_error_delta(fault, args) == ("WINTER_BERTH", "WINTER")
    detail = (
        '<Fault><faultstring>Validation failed</faultstring><detail><error field="season" value="WINTER">'
        "not allowed</error><allowedValues>SUMMER_BERTH WINTER_BERTH</allowedValues></detail></Fault>"
    )
    data = structured(detail)
    assert isinstance(data, dict) and data["field"] == "season" and data["value"] == "WINTER"
    assert "xmlns" not in str(structured(fault))
    assert allowed_values(detail) == ["SUMMER_BERTH", "WINTER_BERTH"]
    assert tool_error_delta(detail, args) == ("WINTER_BERTH", "WINTER")


# --- detection -----------------------------------------------------------------------------------


def test_a_belief_held_before_set_against_the_answer() -> None:
    for reply in (
        "Hold on, I thought only members can use the slipway at night?",
        "I thought we were supposed to book the crane a week ahead.",
        "I was under the impression the fuel dock closes at 17:00.",
    ):
        assert prior_belief(reply), reply
    for control in (
        "I thought so.",
        "I thought that was the case.",
        "I thought about it and I'll take the visitor berth.",
        "I thought I'd ask before I come down.",
        "I thought you might know the tide times.",
    ):
        assert not prior_belief(control), control
    conv = after(
        "Yes, you can launch from the slipway any time you like.",
        "Hold on, I thought only members can use the slipway at night?",
        "Can I launch my dinghy at midnight?",
    )
    assert "n4" in corrections(conv)
    kind, *_ = correction_delta("Hold on, I thought only members can use the slipway at night?", None)
    assert kind == "behaviour"
    assert diagnose(conv, detect_offline(conv)).category == FaultCategory.SYSTEM_PROMPT_GAP
    # agreement after an answer stays quiet
    assert "n4" not in corrections(after("The fuel dock opens at 08:00.", "I thought so, thanks."))


def test_no_another_thing_is_a_repair() -> None:
    answer = "Berth holders with an approved account pay on net 30 terms."
    reply = "No, different thing. The winter storage decision takes three working days, doesn't it?"
    signals = detect_offline(after(answer, reply, "How soon will I hear about winter storage?")).signals
    assert any(s.type == SignalType.CONVERSATIONAL_REPAIR and s.node_id == "n4" for s in signals)
    # a new question that announces itself is not a repair
    control = after(answer, "different question - when is the fuel dock open?", "What are the berth terms?")
    assert not detect_offline(control).escalate


def test_another_number_under_the_same_label() -> None:
    answer = "Berth holders with an approved account pay berth fees on net 45 terms."
    conv = after(answer, "Our office has you set up as net 30. Did something change?", "What are the terms?")
    assert "n4" in corrections(conv)
    # the same label with the same number, and a number with no shared label, stay quiet
    same = after(answer, "Our office has you set up as net 45. When is the fuel dock open?", "Terms?")
    assert "n4" not in corrections(same)


def test_the_recommender_finds_a_page_that_words_the_subject_in_another_order() -> None:
    ws = space()
    conv = (
        Chat(ws, "marina")
        .user("How soon will I know if my boat is accepted for the winter?")
        .search("berth fees approved account")
        .agent("Berth holders with an approved account pay berth fees on net 30 terms.")
        .user(
            "No, different thing. The winter storage application decision time is three working days, isn't it?"
        )
        .build()
    )
    diag = diagnose(conv, detect_offline(conv))
    rec = recommend(conv, diag, ws)
    assert rec.operation == Operation.UPDATE and rec.target_path == "kb/winter-storage.md"


def test_the_one_entry_stating_the_users_value_with_half_their_words() -> None:
    crane = (
        "---\ntitle: Boat lifting\ntags: [yard, lifting]\n---\n# Boat lifting\n\n"
        "Book crane lifts at least 72 hours before the lift date so the yard can plan the tides.\n"
    )
    files = {p: space().read(p) for p in ("system_prompt.md", "kb/fuel-dock.md", "kb/berth-fees.md")}
    ws = Workspace.from_files({**files, "kb/boat-lifting.md": crane})
    conv = (
        Chat(ws, "marina")
        .user("How much notice do you need for the crane?")
        .search("fuel dock open")
        .agent("The fuel dock is open from 08:00 to 18:00 every day.")
        .user(
            "That's not what I asked though. I meant the crane booking lead time, which I think is 72 hours."
        )
        .build()
    )
    diag = diagnose(conv, detect_offline(conv))
    rec = recommend(conv, diag, ws)
    # the entry the search should have found is made findable; the fuel page is left alone
    assert rec.operation == Operation.UPDATE and rec.target_path == "kb/boat-lifting.md"


# --- controls ------------------------------------------------------------------------------------


def test_a_new_question_that_sets_its_own_scene_is_no_objection() -> None:
    answer = "The fuel dock is open from 08:00 to 18:00 every day."
    for reply in (
        "Where's my boat? It was supposed to be launched yesterday.",
        "The crane was supposed to lift us out at 10 and nobody came. Who do I call in the yard?",
    ):
        assert "n4" not in corrections(after(answer, reply, "When is the fuel dock open?")), reply
    # an objection to the answer itself still counts
    assert "n4" in corrections(
        after(
            "I've cancelled your crane slot for tomorrow.",
            "What? Nobody asked you to cancel it, why did you cancel the crane slot?",
            "Can you check my crane slot?",
        )
    )


def test_a_request_the_agent_acted_on_is_no_contradiction() -> None:
    c = Chat(space(), "marina").user("When does the fuel dock close?").agent("The fuel dock closes at 18:00.")
    c.user("Reserve the fuel dock for KP-4410 tomorrow, the crew is aboard 8 to 2.")
    c.nodes.append(
        ConversationNode(
            id=f"n{len(c.nodes) + 1}",
            type=NodeType.TOOL_CALL,
            turn=c.turn,
            name="book_fuel_slot",
            content=json.dumps({"boat_ref": "KP-4410", "from": "08:00", "to": "14:00"}),
            output='{"slot": "08:00-14:00", "status": "BOOKED"}',
        )
    )
    conv = c.agent("Booked: the fuel dock from 08:00 to 14:00 tomorrow.").build()
    assert "n4" not in corrections(conv)


def test_a_duration_that_dates_an_event_is_no_value() -> None:
    answer = "You can cancel a crane slot for free up to 24 hours before it."
    reply = "The crane isn't here and my slot started 20 minutes ago. Do I get anything back?"
    assert "n4" not in corrections(after(answer, reply, "How late can I cancel the crane?"))
    # the same duration as an amount still contradicts
    assert "n4" in corrections(
        after(answer, "The harbour notice says 48 hours now.", "How late can I cancel?")
    )


def test_a_weak_cue_in_a_complaint_before_a_closing_detail() -> None:
    answer = "The fuel dock is open from 08:00 to 18:00 every day."
    reply = "I think the mooring charge on my last bill is wrong, is it too late to query it? It's from 3 weeks ago."
    assert "n4" not in corrections(after(answer, reply, "When is the fuel dock open?"))
