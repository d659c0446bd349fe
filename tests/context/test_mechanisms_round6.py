"""Round 6 of issue 19: structural signals for the sessions that raised none, and the readers behind them.

Every input is written for these tests and set at a city bike-share and rental desk (bikes,
e-bikes, passes, deposits, a repair shop), a setting no domain or kit of the benchmark uses. Each
test holds one mechanism: a rate is not a duration, positions in a schedule are values, two values
side by side in one turn contrast, a number given for the answer's own attribute or count, the
user's own experience told as a second act, a value set off by a colon after a not-found reply,
a new request supplies nothing, the user restating what the agent left out, a disbelieving
question about the agent, the agent's promise quoted back, judgements of what the agent did,
allowed lists in more error dialects, a page's own index words, and metadata under other names.
"""

from __future__ import annotations

import json

from context_generalise.chat import Chat

from causal_middleware.context.absence import states_absence
from causal_middleware.context.agent_acts import agent_act
from causal_middleware.context.authority import SourceInfo, resolve_authority
from causal_middleware.context.conversation import Conversation, ConversationNode, NodeType
from causal_middleware.context.delta import correction_delta
from causal_middleware.context.detector import detect_offline
from causal_middleware.context.objections import behavioural_objection, challenges_agent
from causal_middleware.context.recommendation import Operation
from causal_middleware.context.recommender import recommend
from causal_middleware.context.root_cause import FaultCategory, diagnose
from causal_middleware.context.signals import SignalType
from causal_middleware.context.statements import statement_kind
from causal_middleware.context.text import find_values, same_value
from causal_middleware.context.tool_errors import allowed_values, tool_error_delta
from causal_middleware.context.workspace import Workspace

PROMPT = "# Desk assistant of the Riverside bike share\n\nRules:\n- Answer from the help pages.\n"
PASSES = "---\ntitle: Passes\n---\n# Passes\n\nA day pass costs €15 and covers rides of up to 45 minutes.\n"
DEPOSIT = (
    "---\ntitle: Rental terms\ntags: [deposit, security deposit, damage]\n---\n# Rental terms\n\n"
    "Every rental is held against 200 euros, paid by card when you pick the bike up.\n"
)
SHOP = "---\ntitle: Repair shop\n---\n# Repair shop\n\nThe repair shop can take a bike for up to 20 hours per week.\n"
TOOL = (
    "# order_part\n\nOrders a spare part for a rented bike.\n\nArguments: `bike_no`, `part_code` "
    "(BR01 = brake pads, TY01 = tyre, CH01 = chain).\n"
)


def space() -> Workspace:
    return Workspace.from_files(
        {
            "system_prompt.md": PROMPT,
            "kb/passes.md": PASSES,
            "kb/rental-terms.md": DEPOSIT,
            "kb/repair-shop.md": SHOP,
            "tools/order_part.md": TOOL,
        }
    )


def corrections(conv: Conversation) -> set[str | None]:
    return {s.node_id for s in detect_offline(conv).signals if s.type == SignalType.CORRECTION}


def chat(*turns: tuple[str, str]) -> Conversation:
    c = Chat(space(), "bikes")
    for role, text in turns:
        (c.user if role == "user" else c.agent)(text)
    conv: Conversation = c.build()
    return conv


def after(answer: str, reply: str, question: str = "How long is the loan?") -> Conversation:
    return chat(("user", question), ("agent", answer), ("user", reply))


# --- values: rates and positions ---------------------------------------------------------------


def test_a_duration_per_unit_of_time_is_a_rate_not_the_duration() -> None:
    assert find_values("up to 20 hours per week") == [("measure", "20 hours per week")]
    assert find_values("a 28 hr/week job") == [("measure", "28 hr/week")]
    assert not same_value("24 hours per week", "24 hours")
    # so the user's "24 hours" after "24 hours per week" is another value, not an agreement
    conv = after(
        "The repair shop can take a bike for up to 24 hours per week.",
        "no no, I mean the time to return a bike. my friend said it's 24 hours",
        "How long can I keep a bike?",
    )
    assert "n4" in corrections(conv)


def test_positions_in_a_schedule_are_values() -> None:
    assert find_values("by the end of the second week, not the third week") == [
        ("ordinal", "second week"),
        ("ordinal", "third week"),
    ]
    assert same_value("second week", "2nd week") and same_value("week 4", "4th week")
    assert not same_value("week 3", "week 4")
    answer = "You get a full refund if you cancel by the end of the third week."
    relayed = "The desk told me on the phone it's the end of the second week, not the third week."
    assert correction_delta(relayed, answer) == ("value", "second week", "third week", None)


def test_a_year_beside_a_measured_value_dates_it_and_is_not_the_value() -> None:
    answer = "You can keep the bike for 24 hours before a late fee applies."
    kind, expected, got, _ = correction_delta("That grace period ended in 2024; now it's 12 hours.", answer)
    assert (kind, expected, got) == ("value", "12 hours", "24 hours")


# --- contradictions without cue words ----------------------------------------------------------


def test_the_answers_value_and_another_in_the_same_turn_contrast() -> None:
    answer = "A day pass costs €15."
    for reply in (
        "€15 was last year's price. Since April the kiosk charges €20.",
        "my receipt from yesterday says €20, so why are you telling me €15?",
        "How come you said €15 when the sign at the dock says €20?",
    ):
        assert "n4" in corrections(after(answer, reply, "How much is a day pass?")), reply
    # the user's own plans beside the answer's value contrast nothing
    plans = "Great, €15 is fine. I'll need €20 in change for the locker anyway."
    assert "n4" not in corrections(after(answer, plans, "How much is a day pass?"))


def test_a_number_for_the_answers_own_attribute_contradicts_it() -> None:
    answer = "You pay a security deposit of 200 when you pick the bike up."
    said = "my neighbour got one with a security deposit of exactly 250"
    assert "n4" in corrections(after(answer, said, "What deposit do I need?"))
    # the user's own figure describes their case
    own = "ok. I have a security deposit of 250 on my old account."
    assert "n4" not in corrections(after(answer, own, "What deposit do I need?"))
    ask = "my neighbour paid a security deposit of 250, is that normal?"
    assert "n4" not in corrections(after(answer, ask, "What deposit do I need?"))


def test_another_count_of_what_the_answer_counted_contradicts_it() -> None:
    answer = "The annual pass can be paid in 2 instalments, one now and one in six months."
    assert "n4" in corrections(
        after(
            answer, "my sister is on that plan and it's 3 instalments, she showed me", "Can I pay in parts?"
        )
    )
    # a count of something else, or the user's own tally, is no such statement
    assert "n4" not in corrections(
        after("You need at least 12 rides a month for the bonus.", "ok I'm doing 15 rides this month.")
    )


def test_the_users_experience_told_as_a_second_act_contradicts_the_answer() -> None:
    answer = "A day pass costs €15."
    assert "n4" in corrections(
        after(answer, "We went last May and paid €18 each.", "How much is a day pass?")
    )


def test_a_belief_put_as_a_question_and_a_relayed_choice_question_are_corrections() -> None:
    answer = "You can keep the bike for 24 hours before a late fee applies."
    for reply in (
        "I thought it was 12 hours now?",
        "The printed terms on the bike say 12 hours, so which one is it?",
    ):
        assert "n4" in corrections(after(answer, reply)), reply


def test_the_users_own_figure_before_a_question_sets_the_scene() -> None:
    answer = "You need a rider score of 3.30 or higher for e-bikes."
    assert "n4" not in corrections(after(answer, "My rider score is 3.10. What can I do?"))


# --- a not-found reply and the value the user supplies -----------------------------------------


def test_a_value_set_off_by_a_colon_or_a_dash_is_supplied_after_a_not_found_reply() -> None:
    gap = "Sorry, I couldn't find anything about the helmet rental fee."
    for reply in (
        "ok I found it myself on an old receipt: €3",
        "found it on the back of my card - €3 per ride",
        "ok I found it myself on an old email from the desk: 2nd day of the rental",
    ):
        assert "n4" in corrections(after(gap, reply, "How much is a helmet?")), reply
    # a label with a number is no value; the user's plans supply nothing
    assert "n4" not in corrections(after(gap, "ok, I'll ask at the desk: room 12", "How much is a helmet?"))


def test_the_users_experience_of_the_value_is_supplied_after_a_not_found_reply() -> None:
    gap = "I couldn't find anything about the helmet rental fee."
    assert "n4" in corrections(after(gap, "I paid €3 per ride for mine last time.", "How much is a helmet?"))


def test_an_anaphoric_subject_of_the_negation_reports_an_absence() -> None:
    reply = "Unfortunately that isn't covered in the documentation I have access to."
    assert states_absence(reply, ["How much is a helmet?"])


def test_after_a_not_found_reply_a_relayed_count_is_the_missing_value_not_an_objection() -> None:
    gap = "I don't have information on the number of instalments for the annual pass."
    delta = correction_delta("The person at the kiosk told me it's 3 instalments.", gap)
    assert delta == ("value", "3 instalments", None, None)


def test_a_turn_that_opens_with_a_new_question_or_request_supplies_nothing() -> None:
    answer = "E-bikes need at least 12 rides on your account and no unpaid fines."
    for reply in (
        "add me to the waiting list for bike 40127 thx",
        "my son rides with me, what is his balance? his rider number is 400712345",
    ):
        assert "n4" not in corrections(after(answer, reply, "Can I rent an e-bike?")), reply
    assert statement_kind("add me to the list for May") == "request"


def test_a_relayed_account_before_a_new_question_sets_the_scene() -> None:
    answer = "E-bikes need at least 12 rides on your account and no unpaid fines."
    reply = "The shop is closed but the mechanic says she'll fix my bike anyway. Until when will you hold it?"
    assert "n4" not in corrections(after(answer, reply, "Can I rent an e-bike?"))


# --- what the agent did, objected to without cue words ----------------------------------------


def test_the_user_restating_what_the_reply_left_out_is_a_correction_and_a_behaviour() -> None:
    conv = chat(
        ("user", "I broke my wrist last week and I can't grip properly, which bike should I rent?"),
        ("agent", "Our city bike is the most popular model; it has seven gears."),
        ("user", "like I said, I can't grip properly"),
    )
    assert "n4" in corrections(conv)
    diag = diagnose(conv, detect_offline(conv))
    assert diag.delta is not None and diag.delta.kind == "behaviour"
    assert diag.category == FaultCategory.SYSTEM_PROMPT_GAP


def test_a_disbelieving_question_about_the_agent_is_a_challenge() -> None:
    answer = ("agent", "Of course! Your friend Sam still owes €40 in fines.")
    for reply in (
        "wait, you can just tell me that?",
        "My manager says nobody may share fines, so why did you?",
    ):
        assert "n4" in corrections(chat(("user", "Does Sam owe anything?"), answer, ("user", reply))), reply
        assert correction_delta(reply, answer[1])[0] == "behaviour"
    # an ordinary confirmation and a requirement checked back are not
    assert not challenges_agent("you're open on Sunday too?")
    assert not challenges_agent("you just need my email for that?")


def test_the_agents_promise_quoted_back_disputes_it() -> None:
    answer = "Yes, with the photos your damage claim will definitely be approved."
    assert agent_act(answer) == answer
    reply = "so if they reject it can I show them this chat where you said it'd be approved?"
    conv = after(answer, reply, "If I send photos of the scratch, will my claim go through?")
    assert "n4" in corrections(conv)


def test_judgements_of_what_the_agent_did_are_objections() -> None:
    for sentence in (
        "That seems like something a mechanic should check.",
        "That's not your call to make.",
        "I'd rather you hadn't done that.",
        "I don't think you're qualified to say that.",
        "Er, that's confidential.",
        "Um, is that really safe?",
        "You're not a mechanic though.",
        "you're fixing it yourself?? you're a bot",
        "who are you to tell me it's safe?",
        "There's no way you can know that from here.",
        "This feels like it should go to a human.",
        "Isn't that something only a mechanic can say?",
        "wow, that's a bold thing to promise",
    ):
        assert behavioural_objection(sentence), sentence
    for sentence in (
        "Is there something a rider should bring?",
        "It's personal use only.",
        "you are just a great help",
        "It should go to the address on file.",
    ):
        assert not behavioural_objection(sentence), sentence


# --- tool errors: allowed lists in more dialects ------------------------------------------------


def test_allowed_lists_in_more_error_dialects_are_read() -> None:
    codes = ["BR01", "BR02", "TY01"]
    for error in (
        "ERR,SRL0117,PART_CODE,CH01,INVALID PART CODE - VALID VALUES BR01/BR02/TY01,,",
        "part_code must be BR01, BR02 or TY01",
        "ERR 22: PART_CODE CH01 NOT IN (BR01,BR02,TY01)",
        "CH01 is not a valid PartCode. Valid: BR01 BR02 TY01",
    ):
        assert allowed_values(error) == codes, error
    assert allowed_values("Error: INVALID PART CODE.") == []
    assert allowed_values("see api/v1/parts or call 05/12/2026") == []
    # no field named: the one sent value written like the listed ones is the rejected one
    args = json.dumps({"bike_no": "4410", "part_code": "CH01"})
    assert tool_error_delta("Allowed: [BR01, BR02, TY01]", args) == (None, "CH01")


def test_a_slash_list_leads_to_the_value_the_description_lacks_end_to_end() -> None:
    ws = space()
    c = Chat(ws, "bikes").user("Please order a new chain for bike 4410.")
    c.nodes.append(
        ConversationNode(
            id=f"n{len(c.nodes) + 1}",
            type=NodeType.TOOL_CALL,
            turn=c.turn,
            name="order_part",
            content=json.dumps({"bike_no": "4410", "part_code": "CH01"}),
            output="ERR,SRL0117,PART_CODE,CH01,INVALID PART CODE - VALID VALUES BR01/CH02/TY01,,",
            status="error",
        )
    )
    conv = c.agent("Hmm, that request failed on my side.").user("did it work? I need the bike friday").build()
    diag = diagnose(conv, detect_offline(conv))
    assert diag.category == FaultCategory.TOOL_PROMPT_ERROR
    rec = recommend(conv, diag, ws)
    assert rec.operation == Operation.UPDATE and rec.target_path == "tools/order_part.md"
    assert "CH02" in (rec.new_text or "") and "CH01 =" not in (rec.new_text or "")


# --- the recommender and authority --------------------------------------------------------------


def test_a_pages_own_index_words_name_what_it_is_about() -> None:
    ws = space()
    c = Chat(ws, "bikes").user("What do I pay up front?").search("pay up front day pass")
    c.agent("A day pass costs €15.")
    c.user("no, I mean the security deposit. my friend said it's 200 euros")
    conv = c.build()
    diag = diagnose(conv, detect_offline(conv))
    rec = recommend(conv, diag, ws)
    assert rec.operation == Operation.UPDATE and rec.target_path == "kb/rental-terms.md"


def test_page_metadata_is_read_under_other_names() -> None:
    old = SourceInfo.from_metadata("kb/old.md", {"state": "retired", "replaced_by": "kb/new.md"})
    new = SourceInfo.from_metadata("kb/new.md", {"state": "live", "maintained_by": "Desk team"})
    assert old.status == "retired" and old.superseded_by == "kb/new.md" and new.owner == "Desk team"
    assert resolve_authority([old, new]).winner == "kb/new.md"
    live = SourceInfo.from_metadata("kb/a.md", {"status": "live"})
    draft = SourceInfo.from_metadata("kb/b.md", {"status": "draft"})
    decision = resolve_authority([draft, live])
    assert decision.winner == "kb/a.md" and decision.rule == "status"


def test_a_contrastive_focus_that_opens_the_turn_is_a_correction() -> None:
    answer = "Bikes can be rented for 21 days and renewed twice."
    reply = "not the rental, the hold! pretty sure holds wait 7 days"
    assert "n4" in corrections(after(answer, reply, "how long is a reserved bike held for me?"))
    for reply in ("not a problem, the other dock works too", "Not the best day, I know. Is the shop open?"):
        assert "n4" not in corrections(after(answer, reply)), reply


def test_more_source_verbs_tags_and_number_words_state_a_value() -> None:
    answer = "You need to keep at least £500 on your rider wallet to skip the £5 monthly fee."
    for reply in (
        "With respect, the kiosk confirmed £1,000 only yesterday.",
        "The threshold's gone up to £1,000, hasn't it?",
        "Hmm no, the leaflet I was given says one thousand pounds.",
    ):
        assert "n4" in corrections(after(answer, reply, "How do I skip the monthly fee?")), reply
    assert same_value("one thousand pounds", "£1,000")


def test_the_outcome_the_answer_ruled_out_still_happening_contradicts_it() -> None:
    answer = "You need to keep at least £500 on your rider wallet to skip the £5 monthly fee."
    assert "n4" in corrections(
        after(answer, "i keep £800 and still get the fee", "How do I skip the monthly fee?")
    )
    for reply in ("I'll still keep £600 on it then.", "I still want to top up £600, how?"):
        assert "n4" not in corrections(after(answer, reply, "How do I skip the monthly fee?")), reply
