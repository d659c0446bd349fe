"""Round 10 of issue 19: an apology that names what it is for before conceding, a closing "not X"
that echoes the answer's own words, a belief stated now ("I'm pretty sure ...") against the answer,
"why did you say yes?", an answer asked back as a choice ("is that a week or a month?"), a one-word
rule the prompt cannot be said to state, the counterpart of a rejected word and an elliptical
rejected value ("..., not the first"), the value set against the rejected one rather than an
earlier one, a subject of several words before "is", an entry the agent was shown and reported
nothing from, and the search an absence report names.

Every input is written for these tests and set at a community pottery studio (wheel hire, kiln
firings, glaze classes), a setting no domain or kit of the benchmark uses. Each test holds one
mechanism, with controls that must stay quiet.
"""

from __future__ import annotations

import json

from context_generalise.chat import Chat

from causal_middleware.context.conversation import Conversation, ConversationNode, NodeType
from causal_middleware.context.delta import correction_delta
from causal_middleware.context.detector import detect_offline
from causal_middleware.context.recommendation import Operation
from causal_middleware.context.recommender import recommend
from causal_middleware.context.root_cause import (
    FaultCategory,
    _names_argument,
    _searched_for_absence,
    diagnose,
)
from causal_middleware.context.signals import SignalType
from causal_middleware.context.workspace import Workspace

PROMPT = (
    "# Assistant of the Millbank Pottery Studio\n\nRules:\n- Answer from the studio pages.\n"
    "- Say the studio phone number when a page does not cover a question.\n"
)
WHEELS = (
    "---\ntitle: Wheel hire\n---\n# Wheel hire\n\nEvery membership comes with three aprons. "
    "A wheel can be hired for £9 an hour.\n"
)
KILN = (
    "---\ntitle: Kiln firings\n---\n# Kiln firings\n\nBisque firings are loaded on the first working day "
    "of each week. The spring open firing is on 1 March.\n"
)
BOOKINGS = (
    "---\ntitle: Monthly membership\n---\n# Monthly membership\n\nThe monthly booking fee for members is "
    "£12, taken on the 1st.\n"
)


def space() -> Workspace:
    return Workspace.from_files(
        {
            "system_prompt.md": PROMPT,
            "kb/wheel-hire.md": WHEELS,
            "kb/kiln-firings.md": KILN,
            "kb/membership.md": BOOKINGS,
        }
    )


class _Chat(Chat):
    def _add_reasoning(self, text: str) -> _Chat:
        self._add(NodeType.REASONING, content=text)
        return self


def chat(*turns: tuple[str, str]) -> Conversation:
    c = Chat(space(), "pottery")
    for role, text in turns:
        (c.user if role == "user" else c.agent)(text)
    conv: Conversation = c.build()
    return conv


def signals_of(conv: Conversation, kind: SignalType) -> set[str | None]:
    return {s.node_id for s in detect_offline(conv).signals if s.type == kind}


def corrections(conv: Conversation) -> set[str | None]:
    return signals_of(conv, SignalType.CORRECTION)


# --- detection -----------------------------------------------------------------------------------


def test_an_apology_that_names_what_it_is_for_still_concedes() -> None:
    for ack in (
        "Sorry about that, you're right: firings are on Tuesdays.",
        "Apologies for the confusion - you're correct, it's Tuesdays.",
        "Sorry for the mix-up, you are right.",
    ):
        conv = chat(
            ("user", "Which day are bisque firings loaded?"),
            ("agent", "Bisque firings are loaded on Mondays."),
            ("user", "The board by the kiln room says otherwise."),
            ("agent", ack),
        )
        assert corrections(conv) == {"n4"}, ack
        assert detect_offline(conv).escalate
    # an apology for the wait concedes nothing
    conv = chat(
        ("user", "Which day are bisque firings loaded?"),
        ("agent", "Bisque firings are loaded on Mondays."),
        ("user", "Great, and can I add a pot late?"),
        ("agent", "Sorry for the wait, here it is: late pots go in the next firing."),
    )
    assert corrections(conv) == set()


def test_a_closing_not_that_echoes_the_answers_words_is_a_correction() -> None:
    answer = "Every membership comes with three aprons."
    conv = chat(
        ("user", "How many aprons do I get?"),
        ("agent", answer),
        ("user", "I only got two aprons when I joined, not three."),
    )
    assert corrections(conv) == {"n4"}
    assert detect_offline(conv).escalate
    kind, expected, got, _ = correction_delta("I only got two aprons when I joined, not three.", answer)
    assert (kind, expected, got) == ("value", "two", "three")
    # "not" followed by words the answer never used, or nothing new before it: no echo
    for reply in ("I'll come in on Friday, not sure what time.", "Three aprons, not three."):
        quiet = chat(("user", "How many aprons do I get?"), ("agent", answer), ("user", reply))
        assert corrections(quiet) == set(), reply


def test_a_belief_stated_now_against_the_answer() -> None:
    # the answer shares no word with the user's name for the thing: only the conviction marks the
    # sentence as a claim about the world
    answer = "It takes place on 1 March, and we post the list 14 days before."
    conv = chat(
        ("user", "When is the spring open firing?"),
        ("agent", answer),
        ("user", "Are you sure? I'm pretty certain the spring firing date is 8 March."),
    )
    assert corrections(conv) == {"n4"}
    # a conviction with no other value, or about something unnamed, contradicts nothing
    for reply in ("I'm sure it'll be lovely, thanks.", "I'm not sure about 1 March, I might be away."):
        quiet = chat(("user", "When is the spring open firing?"), ("agent", answer), ("user", reply))
        assert corrections(quiet) == set(), reply


def test_why_did_you_say_yes_challenges_the_answer() -> None:
    conv = chat(
        ("user", "Can I take the studio glazes home?"),
        ("agent", "Yes, that's fine."),
        ("user", "The tutor said glazes stay in the studio, why did you say yes?"),
    )
    assert corrections(conv) == {"n4"}
    quiet = chat(
        ("user", "Can I take the studio glazes home?"),
        ("agent", "No, glazes stay in the studio."),
        ("user", "Why did you close early yesterday?"),
    )
    assert corrections(quiet) == set()


def test_an_answer_asked_back_as_a_choice() -> None:
    ws = space()
    conv = (
        Chat(ws, "pottery")
        .user("How much is wheel hire?")
        .agent("A wheel is £9 an hour.")
        .user("Is that an hour or a session? And are tools included?")
        .build()
    )
    assert signals_of(conv, SignalType.CLARIFICATION_REQUEST) == {"n4"}
    assert detect_offline(conv).escalate
    kind, _, _, rule = correction_delta("Is that an hour or a session?", "A wheel is £9 an hour.")
    assert kind == "behaviour" and rule is not None and "an hour or a session" in rule
    diag = diagnose(conv, detect_offline(conv))
    assert diag.root_node_id == "n1" and diag.category == FaultCategory.SYSTEM_PROMPT_GAP
    rec = recommend(conv, diag, ws)
    assert rec.operation == Operation.UPDATE and rec.target_path == "system_prompt.md"
    # a choice between two things the answer did not say (or both of which it said) is a question
    for reply in ("Is that the red clay or the white clay?", "Is that £9 an hour or a wheel an hour?"):
        quiet = chat(
            ("user", "How much is wheel hire?"), ("agent", "A wheel is £9 an hour."), ("user", reply)
        )
        assert signals_of(quiet, SignalType.CLARIFICATION_REQUEST) == set(), reply
        assert not detect_offline(quiet).escalate, reply


# --- recommendation ------------------------------------------------------------------------------


def test_a_one_word_rule_is_not_taken_as_stated_by_the_prompt() -> None:
    # "why did you say yes?" gives the rule "Do not say yes.": its one content word ("say") is in
    # a prompt line, which must not make the prompt "already state" it
    ws = space()
    conv = (
        Chat(ws, "pottery")
        .user("Can I take the studio glazes home?")
        .agent("Yes, that's fine.")
        .user("The tutor said glazes stay in the studio, why did you say yes?")
        .agent("You're right, I'm sorry. Glazes stay in the studio.")
        .build()
    )
    diag = diagnose(conv, detect_offline(conv))
    assert diag.category == FaultCategory.SYSTEM_PROMPT_GAP
    rec = recommend(conv, diag, ws)
    assert rec.operation == Operation.UPDATE and rec.target_path == "system_prompt.md"
    assert "Can I take the studio glazes home?" in (rec.change_text or "")


def test_an_entry_shown_and_passed_over_is_not_the_answer() -> None:
    # the membership page states £12 for another fee; the agent was shown it and found nothing on
    # the cancellation fee, so the user's £12 is missing content, not the right entry unused
    ws = space()
    conv = (
        Chat(ws, "pottery")
        .user("What is the fee for a cancelled booking?")
        .search("fee cancelled booking")
        .agent("I couldn't find anything about the cancelled booking fee on the studio pages.")
        .user("Come on, it's £12, the tutor told me so.")
        .build()
    )
    assert "kb/membership.md" in [d.path for d in conv.nodes[2].documents]
    diag = diagnose(conv, detect_offline(conv))
    assert diag.category == FaultCategory.KB_CONTENT_GAP
    rec = recommend(conv, diag, ws)
    assert rec.operation == Operation.CREATE


# --- deltas --------------------------------------------------------------------------------------


def test_an_elliptical_rejected_value_is_read_whole_from_the_answer() -> None:
    answer = "Bisque firings are loaded on the first working day of each week."
    kind, expected, got, _ = correction_delta(
        "The rota on the door shows the third working day, not the first.", answer
    )
    assert (kind, expected, got) == ("value", "third working day", "first working day")


def test_the_value_set_against_the_rejected_one() -> None:
    answer = "A wheel can be hired for £9 an hour."
    kind, expected, got, _ = correction_delta(
        "I paid £20 on Saturday for two hours, and the price list says £10 an hour, not £9 an hour.", answer
    )
    assert (kind, expected, got) == ("value", "£10", "£9")
    # no rejected value: the first fresh value stays the expected one
    kind, expected, _, _ = correction_delta("The price list says £10 an hour.", answer)
    assert (kind, expected) == ("value", "£10")


def test_a_subject_of_several_words_before_is() -> None:
    absent = "Sorry, I can't find anything on the studio pages about the glaze class meeting room."
    kind, expected, _, _ = correction_delta(
        "I think the glaze class meeting room is upstairs, if that helps.", absent
    )
    assert (kind, expected) == ("value", "upstairs")


# --- root cause ----------------------------------------------------------------------------------


def _search(node_id: str, query: str) -> ConversationNode:
    return ConversationNode(
        id=node_id, type=NodeType.KB_RETRIEVAL, turn=1, name="search_kb", content=json.dumps({"query": query})
    )


def test_the_search_an_absence_report_names() -> None:
    first = _search("n3", "How long can I keep a wheel booked")
    second = _search("n5", "deadline to dispute a firing charge")
    absent = ConversationNode(
        id="n6",
        type=NodeType.AGENT,
        turn=2,
        content="I don't have information on the deadline to dispute a firing charge.",
    )
    assert _searched_for_absence([first, second], absent) is second
    # an answer that reports a value names no search; one search needs no choosing
    said = absent.model_copy(update={"content": "You have 30 days to dispute a firing charge."})
    assert _searched_for_absence([first, second], said) is None
    assert _searched_for_absence([second], absent) is None


# --- later in the round: detection and deltas ----------------------------------------------------


def test_an_act_asked_back_with_the_condition_it_skipped_is_detected() -> None:
    # with no concession after it: the reproach alone is the correction
    conv = chat(
        ("user", "Please book me on the Saturday glaze class, I'll bring the form later."),
        ("agent", "You're booked on the Saturday glaze class."),
        ("user", "You booked it without my signed safety form? The tutor will turn me away."),
    )
    assert corrections(conv) == {"n4"}
    assert detect_offline(conv).escalate
    quiet = chat(
        ("user", "Please book me on the Saturday glaze class."),
        ("agent", "You're booked on the Saturday glaze class."),
        ("user", "Can I come without an apron?"),
    )
    assert corrections(quiet) == set()


def test_a_change_told_as_an_act_is_a_correction() -> None:
    answer = "Open firings take place on the last Saturday of each month."
    conv = chat(
        ("user", "Which Saturday is the open firing?"),
        ("agent", answer),
        ("user", "They moved the open firings to the second Saturday of the month."),
    )
    assert corrections(conv) == {"n4"}
    kind, expected, got, _ = correction_delta(
        "They moved the open firings to the second Saturday of the month.", answer
    )
    assert (kind, expected, got) == ("value", "second Saturday", "last Saturday")
    # the user's own doing, or a move to the answer's own value, is no correction
    for reply in (
        "I moved my booking to the last Saturday, thanks.",
        "They moved it to the last Saturday, great.",
    ):
        quiet = chat(("user", "Which Saturday is the open firing?"), ("agent", answer), ("user", reply))
        assert corrections(quiet) == set(), reply


def test_another_weekday_from_a_source_disputes_the_answers_weekday() -> None:
    answer = "Kiln loading is every Monday."
    kind, expected, got, _ = correction_delta(
        "Are you sure? The studio newsletter always says loading is on Wednesday.", answer
    )
    assert (kind, expected, got) == ("value", "Wednesday", "Monday")
    # ... unless a rule is spoken beside it: the weekday is then an outcome the user cites
    kind, *_ = correction_delta(
        "You said definitely, and now the tutor says Wednesday. You can't promise that, right?", answer
    )
    assert kind == "behaviour"


# --- later in the round: recommendation and root cause -------------------------------------------


def test_a_claim_sentence_is_found_on_token_boundaries() -> None:
    from causal_middleware.context.recommendation import claim_sentence

    page = "---\ntitle: Wheel rules\nlastmod: 2026-08-19\n---\n# Wheel rules\n\nYou may book up to 6 hours a week.\n"
    assert claim_sentence(page, "6") == "You may book up to 6 hours a week."
    assert claim_sentence("Updated 2026-08-19.", "6") is None


def test_a_rejected_argument_value_as_a_plain_word_is_not_its_source() -> None:
    ws = Workspace.from_files(
        {
            "system_prompt.md": PROMPT,
            "kb/new-members.md": "---\ntitle: New members\n---\n# New members\n\nNew members get a studio tour.\n",
            "tools/book_class.md": "# book_class\n\nBook a class. level: the class level (new, returning).\n",
        }
    )
    c = Chat(ws, "pottery").user("What do new members get?").search("new members")
    c.agent("New members get a studio tour.").user("Book me a beginners class as a new member, please.")
    args = json.dumps({"level": "new", "member": "M-2231"})
    out = "Error 422: unsupported value 'new' for field 'level'. Accepted values: 'beginner', 'returning'."
    c._add(
        NodeType.TOOL_CALL,
        name="book_class",
        content=args,
        output=out,
        status="error",
        source="tools/book_class.md",
    )
    conv = c.agent("Something went wrong.").build()
    diag = diagnose(conv, detect_offline(conv), workspace=ws)
    assert diag.category == FaultCategory.TOOL_PROMPT_ERROR
    assert conv.node(diag.root_node_id or "").type == NodeType.TOOL_CALL
    # a page that gives the value as the argument is where it came from
    assert _names_argument(
        ConversationNode(
            id="x", type=NodeType.SKILL_LOOKUP, turn=1, output="Send level new for first-timers."
        ),
        conv.nodes[-2],
        "new",
    )


def test_the_answers_own_weekday_named_beside_another() -> None:
    answer = "The studio shop is closed on Saturdays."
    conv = chat(
        ("user", "Which day is the shop closed?"),
        ("agent", answer),
        ("user", "It used to be Saturdays but it's Sundays now, isn't it?"),
    )
    assert corrections(conv) == {"n4"}
    # another weekday alone, as the user's own plan, disputes nothing
    quiet = chat(
        ("user", "Which day is the shop closed?"), ("agent", answer), ("user", "I'll pop in on Sunday then.")
    )
    assert corrections(quiet) == set()


def test_a_personal_account_before_a_question_sets_its_scene() -> None:
    conv = chat(
        ("user", "How many free hours come with a wheel booking?"),
        ("agent", "The first 2 hours of each 24 hours are free; after that each hour costs £9."),
        ("user", "I was 10 minutes late finishing, first time ever. Can the late fee come off?"),
    )
    assert corrections(conv) == set()
    # the same account with no question after it is the user's experience against the answer
    told = chat(
        ("user", "How long can I keep a wheel?"),
        ("agent", "You can keep a wheel for 2 hours."),
        ("user", "Last week I was given 3 hours on the wheel, like always."),
    )
    assert corrections(told) == {"n4"}


def test_a_rejected_argument_name_as_a_plain_word_is_not_its_source() -> None:
    call = ConversationNode(
        id="n7",
        type=NodeType.TOOL_CALL,
        turn=2,
        name="add_tools",
        content=json.dumps({"tools": "1", "booking_ref": "B-77"}),
        output="add_tools() got an unexpected keyword argument 'tools' (expected: booking_ref, count)",
        status="error",
    )
    page = ConversationNode(
        id="n4", type=NodeType.KB_RETRIEVAL, turn=1, output="Members may borrow two tools."
    )
    assert not _names_argument(page, call, "tools")
    spec = page.model_copy(update={"output": "add_tools: pass `tools` with the number wanted."})
    assert _names_argument(spec, call, "tools")


def test_an_earlier_page_the_agent_names_is_where_the_answer_came_from() -> None:
    ws = space()
    c = _Chat(ws, "pottery").user("When are bisque firings loaded?").search("bisque firings loaded")
    assert c.nodes[-1].source == "kb/kiln-firings.md"
    conv = (
        c.agent("Bisque firings are loaded on the first working day of each week.")
        .user("Another question: when can I come to the big firing in spring?")
        ._add_reasoning("The Kiln firings page I retrieved earlier covers this.")
        .agent("The spring open firing is on 1 March.")
        .user("Wrong, it's 8 March.")
        .build()
    )
    diag = diagnose(conv, detect_offline(conv))
    assert diag.root_node_id == "n3" and diag.category == FaultCategory.KB_CONTENT_STALE
    # without the agent naming the page, the earlier retrieval is not this question's context
    plain = (
        _Chat(ws, "pottery")
        .user("When are bisque firings loaded?")
        .search("bisque firings loaded")
        .agent("Bisque firings are loaded on the first working day of each week.")
        .user("Another question: when can I come to the big firing in spring?")
        ._add_reasoning("I know this one.")
        .agent("The spring open firing is on 1 March.")
        .user("Wrong, it's 8 March.")
        .build()
    )
    d2 = diagnose(plain, detect_offline(plain))
    assert d2.root_node_id != "n3"
