"""Round 7 of issue 19: sessions that raised no signal, values read in the wrong unit or from the
wrong clause, and tool errors that only name the argument the call left out.

Every input is written for these tests and set at a town leisure centre (a pool, lane bookings,
lockers, guest passes, pool credit), a setting no domain or kit of the benchmark uses. Each test
holds one mechanism, with controls that must stay quiet.
"""

from __future__ import annotations

import json

from context_generalise.chat import Chat

from causal_middleware.context.conversation import Conversation, ConversationNode, NodeType
from causal_middleware.context.delta import correction_delta
from causal_middleware.context.detector import detect_offline
from causal_middleware.context.objections import challenges_agent, doubted_with_source
from causal_middleware.context.recommendation import Operation
from causal_middleware.context.recommender import recommend
from causal_middleware.context.root_cause import FaultCategory, diagnose
from causal_middleware.context.signals import SignalType
from causal_middleware.context.text import find_values, same_value
from causal_middleware.context.tool_errors import renamed_argument
from causal_middleware.context.workspace import Workspace

PROMPT = "# Front desk assistant of the Millbrook leisure centre\n\nRules:\n- Answer from the help pages.\n"
LANES = "---\ntitle: Lane bookings\n---\n# Lane bookings\n\nCancel a lane booking for free up to 2 hours before it starts.\n"
TOOL = (
    "# move_session\n\nMoves a member's swim session. Send the member number as member_no and the new "
    "session start as\nbegins_at (ISO 8601 local time).\n"
)


def space() -> Workspace:
    return Workspace.from_files(
        {"system_prompt.md": PROMPT, "kb/lane-bookings.md": LANES, "tools/move_session.md": TOOL}
    )


def corrections(conv: Conversation) -> set[str | None]:
    return {s.node_id for s in detect_offline(conv).signals if s.type == SignalType.CORRECTION}


def chat(*turns: tuple[str, str]) -> Conversation:
    c = Chat(space(), "pool")
    for role, text in turns:
        (c.user if role == "user" else c.agent)(text)
    conv: Conversation = c.build()
    return conv


def after(answer: str, reply: str, question: str = "How does it work?") -> Conversation:
    return chat(("user", question), ("agent", answer), ("user", reply))


# --- values --------------------------------------------------------------------------------------


def test_a_currency_code_that_is_an_english_word_counts_only_in_capitals() -> None:
    assert find_values("you could try 3 lengths, not 5 lengths") == [("number", "3"), ("number", "5")]
    assert find_values("TRY 300") == [("money", "TRY 300")]
    answer = "Swim no more than 5 lengths underwater; the lifeguard will stop you after that."
    reply = "The lifeguard yesterday said you could try 3 lengths, not 5 lengths."
    assert "n4" in corrections(after(answer, reply))


def test_one_unit_named_by_its_article_is_a_duration() -> None:
    assert find_values("report a lost locker key within an hour of your swim") == [("duration", "an hour")]
    assert find_values("we clean the changing rooms twice a day") == []
    assert same_value("an hour", "60 minutes") and not same_value("an hour", "15 minutes")
    answer = "Report a lost locker key within an hour of your swim, at the front desk."
    reply = "No, it has to be within 15 minutes of your swim, I nearly got charged once."
    assert "n4" in corrections(after(answer, reply))


def test_another_count_of_the_answers_counted_noun_is_a_value_delta() -> None:
    answer = "You can bring no more than 5 guests on a visit."
    reply = "The front desk said you'd allow up to 3 guests before charging."
    assert correction_delta(reply, answer) == ("value", "3 guests", "5 guests", None)


def test_the_disputed_value_is_the_one_in_the_clause_and_nearest_to_the_users() -> None:
    answer = "The pool is open as usual (6am-10pm) except on bank holidays, when it is open 9am-5pm."
    reply = "The noticeboard by reception says it's 8am-6pm on bank holidays"
    assert correction_delta(reply, answer) == ("value", "8am", "9am", None)
    # a clause that shares the correction's words wins over a nearer value
    answer = "Adult swims cost £6, and family swims cost £14."
    assert correction_delta("No, family swims are £16 now.", answer)[2] == "£14"


# --- signals with no cue words -------------------------------------------------------------------


def test_the_agents_instruction_echoed_back_in_disbelief() -> None:
    assert challenges_agent("Someone's fainted by the pool and you're telling me to fill in a form?!")
    assert not challenges_agent("Can you tell me to whom I should write?")
    answer = "Sorry to hear that. First, fill in an incident form at reception."
    reply = "Someone's fainted by the pool and you're telling me to fill in a form?!"
    assert "n4" in corrections(after(answer, reply, "A swimmer collapsed, what do I do about the booking?"))


def test_a_question_whether_what_just_happened_was_proper() -> None:
    for reply in (
        "Hold on, is it safe for you to take my bank details like this?",
        "Actually should I have typed that in the chat at all?",
    ):
        assert challenges_agent(reply), reply
    for control in ("Is it safe to swim after eating?", "Should I have received the card by now?"):
        assert not challenges_agent(control), control
    conv = chat(
        ("user", "Here's my new card for the direct debit: 4929 1234 5678 9012, exp 04/29"),
        ("agent", "Thanks, I've noted that and I'll update your details now."),
        ("user", "Hold on, is it safe for you to take my card number like this?"),
    )
    assert "n4" in corrections(conv)
    diag = diagnose(conv, detect_offline(conv))
    assert diag.category == FaultCategory.SYSTEM_PROMPT_GAP
    assert recommend(conv, diag, space()).operation == Operation.UPDATE


def test_doubt_with_a_source_set_against_the_answer() -> None:
    assert doubted_with_source("Are you sure? The membership leaflet says refunds are reviewed first.")
    assert not doubted_with_source("Are you sure? I thought so.")
    assert not doubted_with_source("The leaflet says refunds are reviewed first.")
    conv = after(
        "Of course, I'll make sure that fee is refunded to you.",
        "Are you sure? The membership leaflet says refunds are reviewed first.",
        "Can you take the late cancellation fee off?",
    )
    assert "n4" in corrections(conv)
    assert diagnose(conv, detect_offline(conv)).category == FaultCategory.SYSTEM_PROMPT_GAP


def test_the_answer_addressed_another_question() -> None:
    answer = "You can bring no more than 5 guests on a visit."
    reply = "You answered a different question; the minimum age to swim alone is 12 years old."
    assert "n4" in corrections(after(answer, reply, "How old does my son have to be to swim alone?"))


def test_a_permission_relayed_is_not_a_hypothetical() -> None:
    answer = "You can bring no more than 5 guests on a visit."
    reply = "I was told on the phone last week I could have up to 6 guests, not 5 guests."
    assert "n4" in corrections(after(answer, reply))
    hypothetical = "6 guests would have been nicer, but fine."
    assert "n4" not in corrections(after(answer, hypothetical))


def test_a_source_relayed_before_a_why_question() -> None:
    answer = "Cancel a lane booking for free up to 1 hour before it starts."
    reply = "Your help page says free up to 2 hours before, so why would I pay?"
    assert "n4" in corrections(after(answer, reply, "Can I still cancel my 3pm lane for free?"))
    # the user's own plan before a question is no source
    plan = "My friend and I want to come 2 hours before, so is that ok?"
    assert "n4" not in corrections(after(answer, plan, "Can I still cancel my 3pm lane for free?"))


def test_a_value_for_the_answers_attribute_named_after_it() -> None:
    answer = "Either way, we add £3 of pool credit to the member's account as an apology."
    reply = "Reception gave my sister £6 of pool credit when the pool closed on her."
    assert "n4" in corrections(after(answer, reply, "The pool was shut when I arrived. Do I get anything?"))
    want = "I'd like £6 of pool credit instead."
    assert "n4" not in corrections(
        after(answer, want, "The pool was shut when I arrived. Do I get anything?")
    )


def test_an_act_that_worked_with_another_value() -> None:
    answer = "You can move a session until 30 minutes before it starts."
    reply = "I moved mine at 10 minutes before the start last week and it worked fine."
    assert "n4" in corrections(after(answer, reply, "How late can I move my session?"))
    same = "I moved mine at 30 minutes before the start last week and it worked fine."
    assert "n4" not in corrections(after(answer, same, "How late can I move my session?"))


# --- tool errors that name only the missing argument ---------------------------------------------

ERROR = json.dumps(
    {
        "message": "The session start field is required.",
        "errors": {"session_start": ["The session start field is required."]},
    }
)
ARGS = json.dumps({"member_no": "M-2291", "begins_at": "2026-12-02T18:45"})


def test_the_missing_argument_was_sent_under_the_name_the_description_gives() -> None:
    assert renamed_argument(ERROR, ARGS, TOOL) == ("session_start", "begins_at")
    # the description already names the required argument: the call did not follow it
    assert renamed_argument(ERROR, ARGS, TOOL.replace("begins_at", "session_start")) == (None, None)
    # no sentence ties the words to a name: the one sent name sharing a word with it
    plain = "# move_session\n\nArguments: `member_no`, `start_at`.\n"
    args = json.dumps({"member_no": "M-2291", "start_at": "2026-12-02T18:45"})
    assert renamed_argument(ERROR, args, plain) == ("session_start", "start_at")


def test_a_renamed_argument_is_fixed_in_the_tool_description_end_to_end() -> None:
    ws = space()
    c = Chat(ws, "pool").user("Please move my swim to 18:45 today, member M-2291.")
    c.nodes.append(
        ConversationNode(
            id=f"n{len(c.nodes) + 1}",
            type=NodeType.TOOL_CALL,
            turn=c.turn,
            name="move_session",
            content=ARGS,
            output=ERROR,
            status="error",
        )
    )
    conv = (
        c.agent("Sorry, that didn't go through on our side.").user("come on, I'm already in the car").build()
    )
    diag = diagnose(conv, detect_offline(conv))
    assert diag.category == FaultCategory.TOOL_PROMPT_ERROR
    rec = recommend(conv, diag, ws)
    assert rec.operation == Operation.UPDATE and rec.target_path == "tools/move_session.md"
    assert "session_start" in (rec.new_text or "") and "begins_at" not in (rec.new_text or "")
