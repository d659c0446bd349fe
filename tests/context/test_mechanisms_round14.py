"""Round 14 of issue 19: a sent argument name chosen among several that share a word with the
required one, an error whose delta already names the required argument, a frequency as a value
("twice a week"), a wiki page's heading and data block, a reply saying the answer was about
something else, and a question why the agent said what it said.

Every input is written for these tests and set at a public botanic garden (glasshouse tours, a
plant clinic, volunteer shifts), a setting no domain or kit of the benchmark uses.
"""

from __future__ import annotations

import json

from context_generalise.chat import Chat

from causal_middleware.context.conversation import ConversationNode, NodeType
from causal_middleware.context.delta import correction_delta
from causal_middleware.context.detector import detect_offline
from causal_middleware.context.markup import first_title, markup_header
from causal_middleware.context.objections import challenges_agent
from causal_middleware.context.recommendation import Operation
from causal_middleware.context.recommender import recommend
from causal_middleware.context.root_cause import FaultCategory, diagnose
from causal_middleware.context.signal_patterns import MISREAD_PATTERN
from causal_middleware.context.text import find_values, frequencies, same_value
from causal_middleware.context.tool_errors import renamed_argument
from causal_middleware.context.workspace import Workspace

# A tool catalogue in JSON: each argument documented on its own line.
CATALOGUE = json.dumps(
    [
        {
            "name": "book_tour",
            "description": "Book a guided glasshouse tour for a group.",
            "parameters": {
                "properties": {
                    "group_size": {"type": "integer"},
                    "tour_time": {"type": "string", "description": "Start time, HH:MM."},
                    "contact": {"type": "string", "description": "Phone number of the group leader."},
                },
                "required": ["group_size", "contact"],
            },
        }
    ],
    indent=2,
)

WIKI_PAGE = """====== Plant clinic ======

---- dataentry infopage ----
section         : Visiting
lastreviewed_dt : 2026-04-02
----

Bring a sample of the sick plant in a sealed bag. The clinic answers within 10 days.
"""


def garden() -> Workspace:
    return Workspace.from_files(
        {
            "system_prompt.md": "# Assistant of the Riverside Botanic Garden\n\n- Answer from the visitor pages.\n",
            "kb/glasshouse-tours.md": (
                "# Glasshouse tours\n\nA guided glasshouse tour lasts 45 minutes and starts at the palm house.\n"
            ),
            "kb/seed-library.md": (
                "# Seed library\n\nBorrowed seed packets go back to the seed library within 30 days of the harvest.\n"
            ),
            "kb/tour-cancellations.md": (
                "# Group tours\n\nGroups sign up at least 30 days before the date of their first "
                "tour shift.\n"
            ),
            "kb/volunteering.md": (
                "# Volunteering\n\nVolunteers must sign up at least 14 days before their first shift.\n"
            ),
            "tools/book_tour.md": (
                "# book_tour\n\nBook a guided glasshouse tour. Arguments: `group_size`, `tour_time`, "
                "`leader_phone` (the phone number of the group leader).\n"
            ),
        }
    )


# --- tool errors --------------------------------------------------------------------------------


def test_the_sent_name_that_covers_the_required_one_wins_a_tie() -> None:
    error = json.dumps({"message": 'Missing required parameter in input: "contact_phone"'})
    # "contact_time" and "phone" share a word each; "phone" has no word the required name lacks
    args = json.dumps({"group_size": 12, "contact_time": "10:30", "phone": "0161 555 0100"})
    described = CATALOGUE.replace('"tour_time"', '"contact_time"').replace('"contact"', '"phone"')
    assert renamed_argument(error, args, described) == ("contact_phone", "phone")
    # two names sharing one word each: the one whose documentation says the other ("phone number")
    args2 = json.dumps({"group_size": 12, "contact_time": "10:30", "contact_person": "0161 555 0100"})
    described2 = CATALOGUE.replace('"tour_time"', '"contact_time"').replace('"contact"', '"contact_person"')
    assert renamed_argument(error, args2, described2) == ("contact_phone", "contact_person")
    # nothing tells them apart: no guess
    args3 = json.dumps({"contact_a": "x", "contact_b": "y"})
    assert renamed_argument(error, args3, "Arguments: `contact_a`, `contact_b`.") == (None, None)


def test_an_error_naming_the_required_argument_is_fixed_in_the_description() -> None:
    ws = garden()
    args = json.dumps({"group_size": 12, "tour_time": "10:30", "leader_phone": "0161 555 0100"})
    error = json.dumps(
        {
            "__type": "ValidationException",
            "message": "1 validation error detected: Value null at 'contact_phone' failed to satisfy "
            "constraint: Member must not be null",
        }
    )
    c = Chat(ws, "garden").user("Can you book a tour for 12 of us at half ten? My number is 0161 555 0100.")
    c.nodes.append(
        ConversationNode(
            id=f"n{len(c.nodes) + 1}",
            type=NodeType.TOOL_CALL,
            turn=c.turn,
            name="book_tour",
            content=args,
            output=error,
            status="error",
        )
    )
    conv = c.agent("The request failed.").user("That didn't work.").build()
    diag = diagnose(conv, detect_offline(conv))
    assert diag.category == FaultCategory.TOOL_PROMPT_ERROR
    assert diag.delta is not None and diag.delta.expected == "contact_phone"
    rec = recommend(conv, diag, ws)
    assert rec.operation == Operation.UPDATE and rec.target_path == "tools/book_tour.md"
    assert "`contact_phone`" in (rec.new_text or "") and "leader_phone" not in (rec.new_text or "")


# --- values ---------------------------------------------------------------------------------------


def test_a_frequency_is_a_value() -> None:
    text = "The fountains run twice a day; the misting runs 3 times per week."
    assert find_values(text) == [("frequency", "3 times per week")]
    assert frequencies(text) == ["twice a day", "3 times per week"]
    assert same_value("twice a day", "2 times a day") and same_value("two times a day", "twice a day")
    assert not same_value("twice a day", "3 times a day")
    assert not same_value("3 times a day", "3 times a week")
    answer = "Volunteers water the glasshouse twice a week."
    assert correction_delta("The rota on the door says 3 times a week.", answer)[:3] == (
        "value",
        "3 times a week",
        "twice a week",
    )


# --- reading the workspace ------------------------------------------------------------------------


def test_a_wiki_heading_and_data_block_are_the_pages_title_and_fields() -> None:
    title, fields = markup_header(WIKI_PAGE)
    assert title == "Plant clinic"
    assert fields == {"section": "Visiting", "lastreviewed_dt": "2026-04-02"}
    ws = Workspace.from_files({"system_prompt.md": "# Garden\n", "kb/plant-clinic.txt": WIKI_PAGE})
    assert ws.kb_entry("kb/plant-clinic.txt").title == "Plant clinic"
    # a MediaWiki heading, and a section heading further down
    assert markup_header("= Opening times =\n\nOpen daily.\n") == ("Opening times", {})
    assert first_title("Intro line.\n\n=== Winter ===\n") == "Winter"
    # a rule, or text between runs of different length, is no heading
    assert markup_header("=====\n\nbody\n") == (None, {})
    assert markup_header("== Half open =\n") == (None, {})


# --- the recommendation ---------------------------------------------------------------------------


def test_an_answer_about_something_else_is_no_rival_claim() -> None:
    ws = garden()
    c = Chat(ws, "garden").user("How long before the date does the form have to go in?")
    c.search("How long before the date does the form have to go in")
    c.agent("Groups sign up at least 30 days before the date of their first tour shift.")
    c.user(
        "That's not what I asked. I meant the minimum time between signing up and the first shift, "
        "and that's 14 days."
    )
    conv = c.build()
    rec = recommend(conv, diagnose(conv, detect_offline(conv)), ws)
    # the page stating the user's value is made reachable; the page shown is left as it is
    assert rec.operation == Operation.UPDATE and rec.target_path == "kb/volunteering.md"


def test_a_reply_saying_the_answer_was_about_something_else_is_read_as_such() -> None:
    for reply in (
        "That's not what I asked. I meant the mulching notice, and that's 14 days.",
        "Sorry, that's about something else. The plant clinic answers within 10 days.",
        "That's a different thing. The glasshouse tour lasts 45 minutes.",
        "That doesn't answer my question, the tour starts at the palm house.",
        "No, a different question: when does the seed library open?",
    ):
        assert MISREAD_PATTERN.search(reply), reply
    # a correction of the answer's own value says nothing of the kind
    for reply in ("The sign at the gate says 60 minutes.", "That's wrong, it's 14 days now."):
        assert not MISREAD_PATTERN.search(reply), reply


def test_asking_why_the_agent_said_it_challenges_the_agent() -> None:
    assert challenges_agent("The gate staff say tours never start early, so why did you tell me it had?")
    assert challenges_agent("Why would you say the palm house was open?")
    # a why-question about the garden, not about what the agent said, is an ordinary question
    assert not challenges_agent("Why does the palm house close early on Mondays?")
    assert not challenges_agent("Why did you close the rose garden?")
