"""Round 18 of issue 19: a validation error that names only the required field, with nothing
received for it, is about that field (the request object it quotes is no value); a parameter
annotated before its name is documented by the annotation; a field ending in another word for
"type" is the one renamed; a rhetorical question after the account that grounds it, an act going
on doubted ("should a bot really be ...?"), "who actually ...?" and "you promised ..." object to
what the agent did; a value asked back in a clause of its own is the answer's, whatever source
another clause cites; the experience of someone the user knows is a value's account; "..., so
which is it?" asks for no fact; advice "quoted back" that the agent never gave is no objection; a
MediaWiki page is titled by its DISPLAYTITLE; and a figure one page alone states is where the
answer was only when the sentence stating it shares a word of the user's.

Every input is written for these tests and set at a glassblowing studio (taster sessions, kiln
hire, commissions), a setting no domain or kit of the benchmark uses.
"""

from __future__ import annotations

import json

from context_generalise.chat import Chat

from causal_middleware.context.agent_acts import disputes_act
from causal_middleware.context.delta import correction_delta
from causal_middleware.context.detector import detect_offline
from causal_middleware.context.objections import behavioural_objection
from causal_middleware.context.recommendation import Operation
from causal_middleware.context.recommender import recommend
from causal_middleware.context.root_cause import diagnose
from causal_middleware.context.statements import asks_for_information
from causal_middleware.context.tool_errors import renamed_argument, tool_error_delta
from causal_middleware.context.workspace import Workspace, page_title


def _spring_error(field: str, message: str = "must not be blank") -> str:
    return json.dumps(
        {
            "status": 400,
            "error": "Bad Request",
            "message": "Validation failed for object='kilnBookingRequest'. Error count: 1",
            "path": "/api/v1/studios/ST-118/kilns",
            "errors": [{"field": field, "rejectedValue": None, "defaultMessage": message}],
        }
    )


def test_a_required_field_with_nothing_received_is_what_the_error_is_about() -> None:
    args = json.dumps({"kilnNumber": "K-7", "studioId": "ST-118"})
    # the object the validator names is no value, and the studio id it echoes in the path is
    # nothing the error rejects
    assert tool_error_delta(_spring_error("kilnId"), args) == ("kilnId", None)
    assert tool_error_delta(_spring_error("firingType", "must not be null"), args) == ("firingType", None)


JAVA_TOOL = """\
@Component
public class BookKilnTool {

    @Tool(name = "book_kiln",
          description = "Book a kiln in one of the studios for a firing.")
    public KilnBooking bookKiln(
            @ToolParam(description = "Studio kiln reference printed on the kiln door, e.g. K-7") String unitNumber,
            @ToolParam(description = "Studio code, format ST-###") String studioId,
            @ToolParam(description = "One of: FUSING, SLUMPING, ANNEALING") String processType) {
        return kilns.book(unitNumber, studioId, processType);
    }
}
"""


def test_a_parameter_annotated_before_its_name_is_documented_by_the_annotation() -> None:
    args = json.dumps({"unitNumber": "K-7", "studioId": "ST-118", "processType": "FUSING"})
    # "kilnRef" shares no word with "unitNumber", but the annotation before it on its line says "kiln"
    assert renamed_argument(_spring_error("kilnRef"), args, JAVA_TOOL) == ("kilnRef", "unitNumber")


def test_a_field_ending_in_another_word_for_type_is_the_renamed_one() -> None:
    args = json.dumps({"unitNumber": "K-7", "studioId": "ST-118", "processType": "FUSING"})
    assert renamed_argument(_spring_error("firingCategory"), args, JAVA_TOOL) == (
        "firingCategory",
        "processType",
    )
    # a required name with no such word, shared by no sent name, still finds nothing
    assert renamed_argument(_spring_error("glazeColour"), args, JAVA_TOOL) == (None, None)


def _session(question: str, answer: str, reply: str) -> Chat:
    ws = Workspace.from_files(
        {
            "system_prompt.md": "# Assistant of Emberline Glass\n\n- Answer from the studio pages.\n",
            "kb/commissions.md": "---\ntitle: Commissions\n---\nA commission takes 6 to 8 weeks from the design sign-off.\n",
        }
    )
    return Chat(ws, "glass").user(question).agent(answer).user(reply)


def test_a_rhetorical_question_after_the_account_that_grounds_it_is_pushback() -> None:
    for answer, reply in (
        (
            "Yes, your bursary will be approved, don't worry.",
            "The panel hasn't even met yet, so how would you know?",
        ),
        (
            "Yes, your bursary will be approved, don't worry.",
            "You don't sit on the panel, how can you say it's approved?",
        ),
        (
            "Your vase will definitely be ready in 3 weeks.",
            "The studio page says it depends on the kiln queue, so why are you promising me 3 weeks?",
        ),
    ):
        conv = _session("Will my bursary come through?", answer, reply).build()
        assert detect_offline(conv).escalate, reply
    # the same account with a question that asks for a fact is no pushback
    conv = _session(
        "Will my bursary come through?",
        "Yes, your bursary will be approved, don't worry.",
        "The panel meets in May, so when will I hear?",
    ).build()
    assert not any(s.type.value == "CORRECTION" for s in detect_offline(conv).signals)


def test_an_act_going_on_doubted_and_who_actually_does_it_are_objections() -> None:
    assert behavioural_objection("Should a chat bot really be telling me which glass to buy?")
    assert behavioural_objection("Should I really be sending my card number in here?")
    assert behavioural_objection("So who actually fires it?")
    # an ordinary question about the future asks
    assert not behavioural_objection("Should I bring my own gloves?")
    assert not behavioural_objection("Who fires the pieces after the taster session?")


def test_you_promised_reports_the_agents_act_back() -> None:
    answer = "Of course, I've reserved that bench for you."
    # (no word of the act's told back: the promise is the act by its kind)
    assert disputes_act("You promised us that spot and we were sent somewhere else.", answer)
    # with no act of the agent's there is nothing to dispute
    assert not disputes_act("You promised us that bench.", "The benches are allocated on the day.")


def test_a_value_asked_back_in_its_own_clause_is_the_answers() -> None:
    answer = "Your vase will definitely be ready in 3 weeks."
    kind, *_ = correction_delta(
        "My receipt says it depends on the queue, so why are you promising me 3 weeks?", answer
    )
    assert kind == "behaviour"
    # a value in the clause that cites the source is that source's word
    kind, expected, *_ = correction_delta("My receipt says 3 weeks, so where is it?", answer)
    assert kind == "value" and expected == "3 weeks"


def test_the_experience_of_someone_the_user_knows_is_an_account_of_the_value() -> None:
    for reply in (
        "My friend was charged £60 for the same session.",
        "Hm, my sister just bought one for £60.",
    ):
        conv = _session(
            "How much is a taster session?", "A taster session costs £45 per person.", reply
        ).build()
        assert detect_offline(conv).escalate, reply


def test_which_is_it_asks_for_no_fact() -> None:
    assert not asks_for_information("I was charged £60 for the taster, so which is it?")
    assert asks_for_information("I was charged £60 for the taster, so which session was it?")
    conv = _session(
        "How much is a taster session?",
        "A taster session costs £45 per person.",
        "I was charged £60 for the taster, so which is it?",
    ).build()
    assert detect_offline(conv).escalate


def test_advice_quoted_back_must_be_something_the_agent_said() -> None:
    said = "A commission takes 6 to 8 weeks from the design sign-off."
    assert not behavioural_objection("you said you'd refund me, when will i actually see the money", said)
    assert behavioural_objection("you said 6 weeks, and it's been ten", said)
    # a value of what was said, quoted back, is some of it
    assert behavioural_objection(
        "You told me I'd definitely have it in 3 weeks and I'm still waiting.",
        "Your vase will be ready in 3 weeks.",
    )
    # without what the agent said, the quoted advice counts as before
    assert behavioural_objection("you said you'd refund me, when will i actually see the money")
    conv = _session(
        "How long does a commission take?",
        said,
        "you said you'd refund me, when will i actually see the money",
    ).build()
    assert not any(s.type.value == "CORRECTION" for s in detect_offline(conv).signals)


WIKI_TASTER = (
    "{{DISPLAYTITLE:Taster sessions (adults, families, groups)}}\n"
    "Emberline runs taster sessions on weekday evenings.\n\n== How much ==\n"
    "An adult place costs £45 and includes one finished paperweight.\n"
)


def test_a_mediawiki_page_is_titled_by_its_displaytitle() -> None:
    assert page_title({}, WIKI_TASTER) == "Taster sessions (adults, families, groups)"


def test_a_figure_one_page_states_needs_the_users_word_in_its_sentence() -> None:
    ws = Workspace.from_files(
        {
            "system_prompt.md": "# Assistant of Emberline Glass\n\n- Answer from the studio pages.\n",
            # states £12 in a row that has nothing to do with the question, under a title that
            # shares one of its words ("kiln")
            "kb/kiln-hire.md": (
                "---\ntitle: Kiln hire\n---\nHire a studio kiln by the firing.\n\n"
                "| Item | Small | Large |\n|---|---|---|\n| Shelf paper | £8 | £12 |\n"
            ),
            "kb/opening-hours.md": "---\ntitle: Opening hours\n---\nThe studio opens at 10:00 and the charge desk at 11:00.\n",
            "kb/taster-sessions.md": "---\ntitle: Taster sessions\n---\nA taster session has no extra charge for tools.\n",
            "kb/gift-cards.md": "---\ntitle: Gift cards\n---\nGift cards carry no charge and last a year.\n",
        }
    )
    c = Chat(ws, "glass").user("What's the overrun charge if I go past my kiln slot?")
    c.search("overrun charge")
    c.agent("I don't have information on the overrun charge.")
    c.user("It is £12.")
    conv = c.build()
    diag = diagnose(conv, detect_offline(conv))
    rec = recommend(conv, diag, ws)
    assert not (rec.operation == Operation.UPDATE and rec.target_path == "kb/kiln-hire.md")
    assert rec.operation == Operation.CREATE


def test_what_happened_last_time_is_an_account_of_the_value() -> None:
    conv = _session(
        "How long does the annealing take?",
        "The annealing cycle runs for 4 hours.",
        "Last time the kiln was full I got my piece back after 12 hours.",
    ).build()
    assert detect_offline(conv).escalate


def test_something_wrong_with_a_thing_is_no_verdict_on_the_answer() -> None:
    conv = _session(
        "How long does the kiln take to cool down?",
        "The kiln cools down overnight, in about 10 hours.",
        "my kiln wont cool down at all at night, is something wrong with it?",
    ).build()
    assert not any(s.type.value == "CORRECTION" for s in detect_offline(conv).signals)


def test_what_the_user_needed_against_what_they_got_is_an_objection() -> None:
    assert behavioural_objection("I needed someone to call me back, not a contact form!")
    assert behavioural_objection("We wanted a refund, not a voucher.")
    # a need for the future with a contrast of values is no objection to what was done
    assert not behavioural_objection("I need the large kiln, not the small one, on Friday.")
    kind, *_ = correction_delta(
        "I needed help right then, not a leaflet!", "You can read our safety leaflet after the session."
    )
    assert kind == "behaviour"
