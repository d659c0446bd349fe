"""Round 17 of issue 19: a complaint that quotes the answer's own value back rejects no value; a
commitment given with a yes or a reassurance, and an act reported without its subject, are the
agent's own acts; a thing the answer counts in words is the value a counted correction disputes;
a noun made with "-ation" is its verb's word; a page the failing search itself returned needs
one of the user's words for the thing to be where the answer was, and so does the one page found
that states an exact figure the user gives (a clock time, an amount); the thing a user names may be
hyphenated or carry a complement; "that's about something else" is a repair however it opens;
another source's account of another value of what the answer stated is a correction; and an HTML
body under YAML front matter is read as the text it shows when a page's sentence is looked for.

Every input is written for these tests and set at a hot-air balloon operator (launch fields,
flight vouchers, weather calls), a setting no domain or kit of the benchmark uses.
"""

from __future__ import annotations

from context_generalise.chat import Chat

from causal_middleware.context.agent_acts import agent_act
from causal_middleware.context.conversation import Conversation, ConversationNode, NodeType
from causal_middleware.context.delta import correction_delta
from causal_middleware.context.detector import detect_offline
from causal_middleware.context.recommendation import Operation
from causal_middleware.context.recommender import _prose, _word_keys, recommend
from causal_middleware.context.root_cause import FaultCategory, diagnose
from causal_middleware.context.workspace import Workspace


def test_a_value_quoted_back_from_the_answer_is_no_value_to_set_right() -> None:
    answer = "Your flight takes off at 06:30 from the east field, that's certain."
    kind, expected, _got, _rule = correction_delta(
        "You told me it would take off at 06:30 and we waited all morning.", answer
    )
    assert kind == "behaviour" and expected != "06:30"
    kind, expected, *_ = correction_delta("06:30? Is that summer time or winter time for me?", answer)
    assert kind == "behaviour"
    # a value another source gives is that source's word, not the answer quoted back
    kind, expected, *_ = correction_delta("The voucher says 06:30 as well, so why is nobody here?", answer)
    assert kind == "value"
    # and a fresh value is still the one the answer should have given
    kind, expected, *_ = correction_delta("It's 07:15 on weekends, not 06:30.", answer)
    assert (kind, expected) == ("value", "07:15")


def test_a_commitment_given_with_a_yes_or_a_reassurance_is_an_act() -> None:
    promise = "Yes, on the dawn flight you'll see the sun rise over the valley."
    assert agent_act(promise) == promise
    assert agent_act("Don't worry, I'll get your voucher moved to the spring.") is not None
    # what the passenger will have to do is no outcome promised
    assert agent_act("Yes, you'll need warm clothes and flat shoes.") is None
    kind, *_ = correction_delta("Nobody can promise the weather, come on.", promise)
    assert kind == "behaviour"


def test_an_act_reported_without_its_subject_is_an_act() -> None:
    answer = "Booked, Saturday 06:30 from the east field."
    assert agent_act(answer) == answer
    # a participle stating a fact is no act ("Closed on Sundays.")
    assert agent_act("Closed on Sundays.") is None
    kind, *_ = correction_delta("I'm in Porto this week, I can't tell what time that is for me.", answer)
    assert kind == "behaviour"


def test_a_thing_the_answer_counts_in_words_is_the_disputed_value() -> None:
    answer = "After a cancelled flight we add half a flight credit to the voucher."
    assert correction_delta("Last year I got 1 flight credit for the same thing.", answer) == (
        "value",
        "1 flight credit",
        "half a flight credit",
        None,
    )
    # either number of the noun ("2 flight vouchers" for "one flight voucher")
    _, expected, got, _ = correction_delta(
        "The crew told me it's 2 flight vouchers.", "You get one flight voucher per cancelled flight."
    )
    assert (expected, got) == ("2 flight vouchers", "one flight voucher")
    # the same count in other words disputes nothing of it
    _, _, got, _ = correction_delta("It should be 1 flight credit.", "We add a flight credit to the voucher.")
    assert got is None


def test_a_noun_made_with_ation_is_its_verb() -> None:
    assert _word_keys({"cancellation"}) == _word_keys({"cancel"})
    assert _word_keys({"reservation"}) == _word_keys({"reserve"})
    assert _word_keys({"station"}) == {"station"}  # too short to be a verb's noun


def _balloon_workspace() -> Workspace:
    return Workspace.from_files(
        {
            "system_prompt.md": "# Assistant of Skylark Balloons\n\n- Answer from the passenger pages.\n",
            "kb/flight-length.md": (
                "---\ntitle: Flight times\n---\n"
                "Flight times: a flight lasts about 1 hour in the air; on the date of your flight allow"
                " 4 hours in all with the launch and the flight back.\n"
            ),
            "kb/moving-your-flight.md": (
                "---\ntitle: Moving your voucher\ntags: [move, rebook]\n---\n"
                "A voucher can be moved to another date up to 3 times, free of charge.\n"
            ),
            "kb/weather.md": (
                "---\ntitle: Weather calls\ntags: [weather, cancel]\n---\n"
                "If you cancel your flight at least 48 hours before the launch, the voucher stays valid.\n"
            ),
            "kb/gift-vouchers.md": (
                "---\ntitle: Gift vouchers\n---\nGift vouchers cost £190 per passenger, or £340 for two, and you can"
                " use the voucher on any flight without losing a day.\n"
            ),
        }
    )


def test_a_page_the_failing_search_returned_needs_one_of_the_users_words() -> None:
    ws = _balloon_workspace()
    c = Chat(ws, "balloons").user("How many times can I change the date of my flight?")
    c.search("How many times can I change the date of my flight")
    c.agent("Flight times: a flight lasts about 1 hour in the air.")
    c.user("That's not what I asked. I wanted the moving limit, and that's 3 times.")
    conv = c.build()
    diag = diagnose(conv, detect_offline(conv))
    assert conv.node(diag.root_node_id).type.value == "kb_retrieval"
    assert "kb/moving-your-flight.md" in {d.path for d in conv.node(diag.root_node_id).documents}
    rec = recommend(conv, diag, ws)
    # the page was shown for the question and states the value: it is not found first, not missing
    assert rec.operation == Operation.UPDATE and rec.target_path == "kb/moving-your-flight.md"
    assert diag.category in (FaultCategory.KB_CONTENT_GAP, FaultCategory.RETRIEVAL_FAILURE)


def test_a_page_found_by_the_verb_of_the_users_noun_is_where_the_answer_was() -> None:
    ws = _balloon_workspace()
    c = Chat(ws, "balloons").user("Until when can I drop out without losing the voucher?")
    c.search("Until when can I drop out without losing the voucher")
    c.agent("Gift vouchers cost £190 per passenger, or £340 for two.")
    c.user("That's a different thing. The free cancellation cut-off for a flight is 48 hours.")
    conv = c.build()
    rec = recommend(conv, diagnose(conv, detect_offline(conv)), ws)
    assert rec.operation == Operation.UPDATE and rec.target_path == "kb/weather.md"


def test_the_thing_named_with_hyphens_or_a_complement_is_given_a_value() -> None:
    absent = "I couldn't find anything about the launch-field gate code."
    assert correction_delta("I'm fairly sure the launch-field gate code is Sky-Gate.", absent)[:2] == (
        "value",
        "Sky-Gate",
    )
    answer = "Gift vouchers cost £190 per passenger, or £340 for two."
    kind, expected, *_ = correction_delta(
        "That doesn't answer my question, the flight for two people in a private basket is Skylark Duo.",
        answer,
    )
    assert (kind, expected) == ("value", "Skylark Duo")


def _session(*turns: tuple[str, str]) -> Conversation:
    nodes = [
        ConversationNode(id="n1", type=NodeType.SYSTEM_PROMPT, turn=0, output="You help balloon passengers.")
    ]
    turn = 0
    for kind, text in turns:
        turn += kind == "user"
        node_type = NodeType.USER if kind == "user" else NodeType.AGENT
        nodes.append(ConversationNode(id=f"n{len(nodes) + 1}", type=node_type, turn=turn, content=text))
    return Conversation(session_id="balloons", nodes=nodes)


def test_an_answer_said_to_be_about_something_else_is_a_repair() -> None:
    conv = _session(
        ("user", "What do I pay now to hold the dawn flight?"),
        ("agent", "Flights in July have a minimum group of 4 passengers."),
        ("user", "Sorry, that's about something else. The booking deposit is 20%."),
    )
    assert detect_offline(conv).escalate
    calm = _session(
        ("user", "When is the next dawn flight?"),
        ("agent", "The next dawn flight is on Saturday at 06:30."),
        ("user", "That's about it for me, thanks."),
    )
    assert not detect_offline(calm).escalate


def test_another_sources_account_of_another_value_is_a_correction() -> None:
    conv = _session(
        ("user", "Can the crew fly us more than once a week?"),
        ("agent", "We can fly each passenger up to twice a week, weather permitting."),
        ("user", "The pilot at the east field said you can do 3 times a week."),
    )
    assert detect_offline(conv).escalate
    # a relayed account asked about is no correction
    asked = _session(
        ("user", "Can the crew fly us more than once a week?"),
        ("agent", "We can fly each passenger up to twice a week, weather permitting."),
        ("user", "The pilot said you can do 3 times a week, is that right?"),
    )
    assert not detect_offline(asked).escalate


def test_the_one_page_stating_an_exact_figure_the_user_gives_is_where_the_answer_was() -> None:
    ws = Workspace.from_files(
        {
            "system_prompt.md": "# Assistant of Skylark Balloons\n\n- Answer from the passenger pages.\n",
            "kb/evening-flights.md": (
                "---\ntitle: Evening flights\n---\n"
                "Evening flights in summer carry up to 8 passengers in the big basket.\n"
            ),
            "kb/meeting-point.md": (
                "---\ntitle: Where we meet\ntags: [meeting point, car park]\n---\n"
                "On weekdays the crew meets passengers in the field car park at 05:45.\n"
            ),
            "kb/gift-vouchers.md": "---\ntitle: Gift vouchers\n---\nGift vouchers can be used on evening flights.\n",
            "kb/summer-season.md": (
                "---\ntitle: The summer season\n---\nIn summer we fly every evening and at dawn, weather permitting.\n"
            ),
            "kb/time-aloft.md": (
                "---\ntitle: Time in the air\n---\nAn evening flight spends about 1 hour in the air in summer.\n"
            ),
        }
    )
    c = Chat(ws, "balloons").user("What time does the crew want me for an evening flight in summer?")
    c.search("What time does the crew want me for an evening flight in summer")
    c.agent("Evening flights in summer carry up to 8 passengers in the big basket.")
    c.user("Not what I meant. I've seen 05:45 for that somewhere.")
    conv = c.build()
    diag = diagnose(conv, detect_offline(conv))
    assert conv.node(diag.root_node_id).source != "kb/meeting-point.md"
    rec = recommend(conv, diag, ws)
    # only one word of the user's ("crew") on the page, but the page alone states 05:45
    assert rec.operation == Operation.UPDATE and rec.target_path == "kb/meeting-point.md"


def test_an_html_body_under_yaml_front_matter_is_read_as_its_text() -> None:
    page = (
        "---\ntitle: Weight limits (2025)\nmodified: 2025-03-01\n---\n"
        "<p>Every passenger is weighed at check-in.</p><ul><li>Passengers over 120 kg fly on a"
        " private basket</li></ul><p>Children fly from age 8.</p>"
    )
    assert "- Passengers over 120 kg fly on a private basket" in _prose(page).splitlines()
    ws = Workspace.from_files(
        {
            "system_prompt.md": "# Assistant of Skylark Balloons\n\n- Answer from the passenger pages.\n",
            "kb/weight-limits-2025.md": page,
            "kb/weight-limits.md": (
                "---\ntitle: Weight limits\nmodified: 2026-02-01\n---\n"
                "Every passenger is weighed at check-in.\n\n"
                "- Passengers over 130 kg fly on a private basket\n\nChildren fly from age 8.\n"
            ),
        }
    )
    c = Chat(ws, "balloons").user("Above what weight do passengers need the private basket (2025 rules)?")
    c.read("kb/weight-limits-2025.md")
    c.agent("Passengers over 120 kg fly on a private basket.")
    c.user("The sign at the field says 130 kg now.")
    conv = c.build()
    rec = recommend(conv, diagnose(conv, detect_offline(conv)), ws)
    # the two pages' sentences differ only in the value: the old copy goes
    assert rec.operation == Operation.DELETE and rec.target_path == "kb/weight-limits-2025.md"
