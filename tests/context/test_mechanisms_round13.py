"""Round 13 of issue 19: a field list above a page's title, codes set against codes, a bare word that
is no value, an objection with no value as behaviour, a reply the agent never answered, the agent's
own admission of error, a question in a statement's word order, a belief about a named thing after
an absence, amounts stated with "took" / "pays", and the empty search of the answer's own turn.

Every input is written for these tests and set at a public observatory (star nights, planetarium
shows, telescope hire), a setting no domain or kit of the benchmark uses.
"""

from __future__ import annotations

from context_generalise.chat import Chat

from causal_middleware.context.conversation import Conversation
from causal_middleware.context.delta import correction_delta
from causal_middleware.context.detector import detect_offline
from causal_middleware.context.markup import markup_header
from causal_middleware.context.root_cause import FaultCategory, diagnose
from causal_middleware.context.signals import SignalType
from causal_middleware.context.statements import declarative_question
from causal_middleware.context.workspace import Workspace

DOME_PAGE = """:id: OBS-210
:owner: Visitor services
:last_reviewed: 2026-09-01
:keywords: dome tour, behind the scenes, telescope floor

Dome tours
==========

A guided tour of the telescope dome costs EUR 8 per person and lasts 40 minutes.
"""


def space() -> Workspace:
    return Workspace.from_files(
        {
            "system_prompt.md": "# Assistant of the Hillcrest Observatory\n\n- Answer from the visitor pages.\n",
            "kb/dome-tours.rst": DOME_PAGE,
            "kb/planetarium.md": "# Planetarium shows\n\nA planetarium ticket costs EUR 15; shows start on the hour.\n",
            "kb/late-arrival.md": "# Arriving late\n\nLatecomers are let in at the next break in the show.\n",
        }
    )


def chat(*turns: tuple[str, str]) -> Conversation:
    c = Chat(space(), "observatory")
    for role, text in turns:
        (c.user if role == "user" else c.agent)(text)
    conv: Conversation = c.build()
    return conv


def corrections(conv: Conversation) -> set[str | None]:
    return {s.node_id for s in detect_offline(conv).signals if s.type == SignalType.CORRECTION}


# --- reading the workspace -----------------------------------------------------------------------


def test_a_field_list_above_the_title_is_the_pages_metadata() -> None:
    title, fields = markup_header(DOME_PAGE)
    assert title == "Dome tours"
    assert fields["id"] == "OBS-210" and fields["keywords"].startswith("dome tour")
    entry = space().kb_entry("kb/dome-tours.rst")
    assert entry.title == "Dome tours"
    assert entry.id == "OBS-210" and "behind the scenes" in entry.keywords
    # the page's own index words find it for a question worded otherwise
    assert space().search_kb("behind the scenes visit", k=1)[0].path == "kb/dome-tours.rst"
    # fields alone, with no title under them, are still read
    assert markup_header(":owner: Visitor services\n:status: draft\n") == (
        None,
        {"owner": "Visitor services", "status": "draft"},
    )


# --- the delta -----------------------------------------------------------------------------------


def test_a_code_set_against_the_answers_code_is_a_value() -> None:
    answer = "Enter the code STARS24 at checkout for the member price."
    assert correction_delta("STARS24 gets rejected. The newsletter says STARS25.", answer) == (
        "value",
        "STARS25",
        "STARS24",
        None,
    )
    assert correction_delta("Just tried that and it failed. Is it STARS25?", answer)[:3] == (
        "value",
        "STARS25",
        "STARS24",
    )
    # an answer with two codes names no one value to set right; capitals alone are no code
    two = "Use STARS24 for members and SKY9 for students."
    assert correction_delta("It failed. Is it STARS25?", two)[2] is None
    assert correction_delta("That's not what the NASA page says.", answer)[1:3] != ("NASA", "STARS24")


def test_a_bare_word_against_an_answer_with_no_value_is_no_value() -> None:
    answer = "That's normal on a clear night. Let me check your booking."
    kind, expected, got, _ = correction_delta("I told you it's leaking everywhere.", answer)
    assert (kind, expected, got) == ("behaviour", "I told you it's leaking everywhere.", None)
    # an answer that states a value keeps the word as a value to set right ...
    assert correction_delta("Actually it's free now.", "The dome tour costs EUR 8.")[0] == "value"
    # ... and so does a turn that calls the answer wrong
    kind, expected, got, _ = correction_delta(
        "That's wrong, latecomers are let in at the next break.", "Latecomers are let in at the interval"
    )
    assert kind == "value"


def test_an_objection_with_no_value_to_what_the_agent_advised_is_behaviour() -> None:
    answer = "Just climb onto the mount and loosen the clamp yourself."
    for objection in (
        "You want me to climb onto the mount? That could hurt someone.",
        "I don't think the staff would want visitors loosening the clamp like that.",
        "Is that safe? I honestly wasn't sure I should touch it.",
    ):
        assert correction_delta(objection, answer)[0] == "behaviour", objection
    # a bare complaint that speaks neither of the answer nor to the agent, a judgement of the
    # answer's truth, and a reply to an absence report set no behaviour
    assert correction_delta("Ugh, this is frustrating.", answer)[0] == "none"
    assert correction_delta("Hmm, that's out of date.", answer)[0] != "behaviour"
    assert correction_delta("You must have it somewhere.", "I couldn't find that, sorry.")[0] != "value"


# --- detection -----------------------------------------------------------------------------------

LASER = ("user", "Can I bring my own laser pointer to the star night?")
SURE = ("agent", "Sure, bring any laser pointer you like and aim it at the sky for the group.")


def test_a_reply_left_unanswered_is_an_objection() -> None:
    conv = chat(
        LASER, SURE, ("user", "I don't think the pilots overhead would want a laser pointer aimed like that.")
    )
    assert corrections(conv) == {"n4"}
    assert detect_offline(conv).escalate
    # the user speaks again with no reply in between: the first turn was left unanswered
    conv = chat(
        LASER,
        SURE,
        ("user", "Isn't that dangerous for aircraft?"),
        ("user", "Okay, I'll sort it out myself."),
    )
    assert "n4" in corrections(conv)
    # thanks, a plan, a new question or a value close the exchange or are for other rules
    for reply in (
        "Brilliant, cheers for the laser tip.",
        "I'll bring my laser pointer on Friday then.",
        "Is the car park open late for the star night?",
        "My laser pointer is 5 mW.",
        "Three lasers, then.",
    ):
        assert corrections(chat(LASER, SURE, ("user", reply))) == set(), reply
    # a reply the agent answered is no unanswered one
    answered = chat(
        LASER, SURE, ("user", "I don't think the pilots would like that laser."), ("agent", "Noted.")
    )
    assert "n4" not in corrections(answered)


def test_the_agent_owning_its_error_marks_the_turn_before_as_a_correction() -> None:
    for ack in ("Apologies, I had that wrong.", "Sorry, I was mistaken there.", "I made a mistake, sorry."):
        conv = chat(
            ("user", "When does the planetarium show start?"),
            ("agent", "Shows start at half past the hour."),
            ("user", "Hmm, the poster at the entrance had something else."),
            ("agent", ack),
        )
        assert "n4" in corrections(conv), ack


def test_a_question_in_a_statements_word_order_asserts() -> None:
    for sentence in (
        "The booking page shows EUR 12 though?",
        "Surely it's 30 minutes?",
        "I thought it was EUR 12?",
    ):
        assert declarative_question(sentence), sentence
    for sentence in (
        "Is it open on Mondays?",
        "Didn't it change?",
        "The show starts when?",
        "I paid EUR 12 last time, is that still right?",
        "My friend and I want to come early, so is that ok?",
    ):
        assert not declarative_question(sentence), sentence
    conv = chat(
        ("user", "How much is a planetarium ticket?"),
        ("agent", "A planetarium ticket costs EUR 15."),
        ("user", "The booking page shows EUR 12 for the planetarium though?"),
    )
    assert "n4" in corrections(conv)


def test_a_belief_about_a_named_thing_after_an_absence_supplies_the_answer() -> None:
    for reply in (
        "Really? I'm fairly sure the telescope hire fee is EUR 20.",
        "I looked it up last month: the telescope hire fee is EUR 20.",
    ):
        conv = chat(
            ("user", "What does it cost to hire a telescope?"),
            ("agent", "I can't find that in our visitor pages, sorry."),
            ("user", reply),
        )
        assert "n4" in corrections(conv), reply


def test_amounts_stated_by_other_verbs_and_sources_contradict_the_answer() -> None:
    asked = ("user", "How long does telescope set-up take?")
    for answer, reply in (
        ("Telescope set-up takes 45 minutes.", "Really? Last time it only took 20 minutes."),
        ("A family ticket is EUR 36.", "Isn't the family ticket EUR 30? That's what the leaflet says."),
        ("A family ticket is EUR 36.", "Are you sure? I read EUR 30 on your page."),
        ("A family ticket is EUR 36 for four.", "My sister brings her kids and only pays EUR 30 for four."),
    ):
        assert "n4" in corrections(chat(asked, ("agent", answer), ("user", reply))), reply


# --- root cause ----------------------------------------------------------------------------------


def test_the_empty_search_is_the_one_in_the_answers_own_turn() -> None:
    c = Chat(space(), "observatory")
    c.user("When do latecomers get into a planetarium show?")
    c.search("late arrival planetarium show")
    c.agent("Latecomers are let in at the next break in the show.")
    c.user("And what do you charge if I arrive late to the planetarium show?")
    c.search("late arrival charge")
    c.agent("I don't have that to hand, I'm afraid.")
    c.user("The website says the late arrival charge is EUR 5.")
    conv = c.build()
    diag = diagnose(conv, detect_offline(conv))
    second_search = [n.id for n in conv.nodes if n.name == "search_kb"][1]
    assert diag.category == FaultCategory.KB_CONTENT_GAP
    assert diag.root_node_id == second_search
