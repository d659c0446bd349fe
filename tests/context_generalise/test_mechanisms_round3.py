"""Regression tests for the third round of generalising mechanisms (issue 19): none names a domain.

A reply that states the asked subject's absence, however it is worded; a value relayed from a
source ("the leaflet says ...", "I was told ...") against the agent's; objections to what the agent
did read from the sentence's structure (an obligation on someone else, the agent's advice quoted
back, an expected step not yet taken); a list a tool error introduces with a colon; new pages named
by the subject noun phrase, not the sentence around it; two questions that share one word kept
apart. The inputs are a city museum's visitor desk, written for these tests.
"""

from __future__ import annotations

import json

from causal_middleware.context.absence import states_absence
from causal_middleware.context.conversation import Conversation
from causal_middleware.context.delta import correction_delta
from causal_middleware.context.detector import detect_offline
from causal_middleware.context.objections import behavioural_objection
from causal_middleware.context.recommendation import Operation
from causal_middleware.context.recommender import recommend
from causal_middleware.context.root_cause import diagnose
from causal_middleware.context.segmenter import segment
from causal_middleware.context.signals import SignalType
from causal_middleware.context.tool_errors import allowed_values, enumeration, tool_error_delta
from causal_middleware.context.workspace import Workspace

from .test_mechanisms_round2 import Chat

PROMPT = "# Museum visitor desk\n\nRules:\n- Answer from the museum's pages.\n"


def museum() -> Workspace:
    return Workspace.from_files(
        {
            "system_prompt.md": PROMPT,
            "kb/visiting/opening-hours.md": "# Opening hours\n\nThe galleries open at 10:00 and close at 17:00.\n",
            "kb/visiting/cloakroom.md": "# Cloakroom\n\nCoats and bags up to 40 x 30 cm go in the cloakroom.\n",
            "kb/tickets/adult-ticket.md": "# Adult ticket\n\nAn adult ticket costs EUR 14.\n",
        }
    )


def chat(*turns: tuple[str, str]) -> Conversation:
    c = Chat(Workspace.from_files({"system_prompt.md": PROMPT}))
    for role, text in turns:
        (c.user if role == "user" else c.agent)(text)
    return c.build()


def corrected(conv: Conversation) -> set[str | None]:
    return {s.node_id for s in detect_offline(conv).signals if s.type == SignalType.CORRECTION}


# --- absence stated in any wording ------------------------------------------------------------


def test_a_reply_that_negates_the_asked_subject_and_gives_no_value_states_absence() -> None:
    asked = "Is there a discount for school groups?"
    assert states_absence("Our pages say nothing on school group discounts, sadly.", asked)
    assert states_absence(
        "I'm not seeing a school group rate anywhere here.", [asked, '{"query": "group rate"}']
    )
    # a value, a reply about something else, and a question back are not absence
    assert not states_absence("School groups don't pay full price: it is EUR 6 each.", asked)
    assert not states_absence("No problem at all!", asked)
    assert not states_absence("Not sure, do you mean school groups or families?", asked)


def test_a_value_after_a_stated_absence_is_a_supplied_answer() -> None:
    c = Chat(museum()).user("Is there a discount for school groups?").search("school group discount")
    c.agent("Our pages say nothing on school group discounts, sadly.")
    assert corrected(c.user("The teacher who booked last year was given 40% off.").build()) == {"n5"}
    c = Chat(museum()).user("Is there a discount for school groups?").search("school group discount")
    c.agent("Our pages say nothing on school group discounts, sadly.")
    assert corrected(c.user("Okay, I'll ask at the front desk.").build()) == set()


# --- values relayed from a source ------------------------------------------------------------


def test_a_value_relayed_from_a_source_contradicts_the_answer_in_any_framing() -> None:
    asked = ("user", "When do the galleries close on Sundays?")
    said = ("agent", "The galleries close at 17:00 on Sundays.")
    for reply in (
        "Really? The leaflet I picked up says 18:00.",
        "I was told 18:00 by the man at the gate.",
        "My guidebook lists 18:00.",
    ):
        assert corrected(chat(asked, said, ("user", reply))) == {"n4"}, reply
    # the user's own plans carry a value of the same kind but relay nobody's statement
    assert corrected(chat(asked, said, ("user", "I usually get there at 16:00."))) == set()


# --- objections to what the agent did ------------------------------------------------------------


def test_objections_are_read_from_the_sentence_structure() -> None:
    for sentence in (
        "Surely a guard has to look after unattended bags?",
        "I thought tours had to be booked in advance.",
        "Are you even permitted to waive the entry fee?",
        "You told me to leave my coat on the bench and now it's gone.",
        "Wait, nobody has checked my ticket yet.",
    ):
        assert behavioural_objection(sentence), sentence
    for sentence in (
        "Do I need to book the audio guide?",  # what the user must do: a question for information
        "I have to leave by five.",  # an obligation on the user
        "We were late, how long must we wait for the next tour?",  # asks in a later clause
        "Can you tell me where the lifts are?",  # a request
        "The café is lovely.",
    ):
        assert not behavioural_objection(sentence), sentence


def test_an_objection_is_a_behavioural_correction_rooted_in_the_instructions() -> None:
    conv = chat(
        ("user", "Can I leave my rucksack by the entrance?"),
        ("agent", "Sure, just leave it by the door."),
        ("user", "Surely a guard has to look after unattended bags?"),
    )
    assert corrected(conv) == {"n4"}
    kind, _, _, rule = correction_delta(conv.nodes[3].content, conv.nodes[2].content)
    assert kind == "behaviour" and rule
    assert diagnose(conv, detect_offline(conv)).root_node_id == "n1"


# --- tool errors ---------------------------------------------------------------------------------


def test_a_list_after_a_colon_is_the_tools_accepted_values() -> None:
    error = "400 Bad Request: unknown parameter 'visitors'. Permitted parameters: visitor_count, date, slot."
    assert allowed_values(error) == ["visitor_count", "date", "slot"]
    args = json.dumps({"visitors": "4", "date": "2026-12-05", "slot": "AM"})
    assert tool_error_delta(error, args) == ("visitor_count", "visitors")
    # a colon before a sentence, or before one value, introduces no list
    assert enumeration("Error: the booking service is down, please try again later.") == []
    assert enumeration("Rejected: visitors.") == []


# --- new pages and segments --------------------------------------------------------------------


def test_a_new_page_is_named_by_the_subject_noun_phrase_not_the_sentence() -> None:
    ws = museum()
    c = Chat(ws).user("How much is a family pass?").search("family pass price")
    c.agent("Sorry, there's nothing about the family pass price that I can find.")
    conv = c.user("The website said it's EUR 35.").build()
    rec = recommend(conv, diagnose(conv, detect_offline(conv)), ws)
    assert rec.operation == Operation.CREATE
    assert rec.target_path is not None and rec.target_path.endswith("/family-pass-price.md")


def test_two_questions_sharing_only_their_verb_are_two_segments() -> None:
    conv = chat(
        ("user", "When does the rooftop terrace close?"),
        ("agent", "The rooftop terrace closes at 16:00."),
        ("user", "When does the gift shop close?"),
        ("agent", "The gift shop closes at 17:30."),
        ("user", "Does the gift shop close earlier in winter?"),
        ("agent", "Yes, at 16:30."),
    )
    assert [s.turns for s in segment(conv)] == [[1], [2, 3]]
