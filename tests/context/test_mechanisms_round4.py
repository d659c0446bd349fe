"""Regression tests for the fourth round of generalising mechanisms (issue 19): none names a domain.

A page's change date read from whatever front-matter key means it; allowed-value lists an error
introduces with an arrow or a dash, or quotes as a run; the rejected argument an error names
without quoting; a repair that restates what the user meant with a value; a page titled by the
words of what the user talks about; objections read from their structure (a reproach for what was
left undone, an exposure the agent caused, a permission asked about what was just done, nobody
having done what was due, another source's account set against the agent's, a challenge with an
intensifier); a weak cue that describes something new; a look-up reported empty in any wording.
The inputs are a veterinary clinic's front desk, written for these tests.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from context_generalise.chat import Chat

from benchmarks.context.kit import KitBenchmark, generate_kit_benchmark, load_kit
from causal_middleware.context.absence import states_absence
from causal_middleware.context.authority import SourceInfo, resolve_authority
from causal_middleware.context.conversation import Conversation
from causal_middleware.context.dates import change_date, iso_date
from causal_middleware.context.delta import claimed_subject, correction_delta
from causal_middleware.context.detector import detect_offline
from causal_middleware.context.objections import behavioural_objection, relayed_conflict
from causal_middleware.context.recommendation import Operation
from causal_middleware.context.recommender import recommend
from causal_middleware.context.root_cause import diagnose
from causal_middleware.context.signals import SignalType
from causal_middleware.context.tool_errors import enumeration, tool_error_delta
from causal_middleware.context.workspace import Workspace

PROMPT = "# Clinic front desk\n\nRules:\n- Answer from the clinic's pages.\n"


def bare() -> Workspace:
    return Workspace.from_files({"system_prompt.md": PROMPT})


def corrected(conv: Conversation) -> set[str | None]:
    return {s.node_id for s in detect_offline(conv).signals if s.type == SignalType.CORRECTION}


def reply(
    answer: str, complaint: str, question: str = "Can you book Biscuit in for Thursday?"
) -> Conversation:
    return Chat(bare(), "clinic").user(question).agent(answer).user(complaint).build()


# --- the change date, whatever its key is called -----------------------------------------------


def test_a_change_date_is_read_from_any_key_whose_name_means_a_change() -> None:
    for key in ("modified", "last_updated", "dateModified", "revised_on", "reviewed", "changed", "edited-at"):
        assert change_date({"title": "Vaccines", key: "2025-06-30"}) == "2025-06-30", key
    # the latest of several change dates; YAML dates and datetimes read alike
    assert change_date({"published": "2023-01-05", "last_revised": dt.date(2024, 9, 1)}) == "2024-09-01"
    assert change_date({"updated_at": dt.datetime(2025, 2, 3, 8, 15)}) == "2025-02-03"


def test_creation_expiry_and_scheduled_dates_are_not_change_dates() -> None:
    assert (
        change_date({"created": "2025-01-01", "expires": "2026-01-01", "next_review": "2025-12-01"}) is None
    )
    # a bare date key counts only when no change-named key is there
    assert change_date({"date": "2022-04-04"}) == "2022-04-04"
    assert change_date({"date": "2022-04-04", "revised": "2021-01-01"}) == "2021-01-01"
    # a change-named key whose value is no date is ignored
    assert change_date({"updated": "recently", "as_of": "2024-07-07"}) == "2024-07-07"


def test_written_dates_are_read_as_iso() -> None:
    assert iso_date("7 March 2025") == "2025-03-07"
    assert iso_date("March 7th, 2025") == "2025-03-07"
    assert iso_date("Sept 30 2024") == "2024-09-30"
    assert iso_date("2025/03/07") == "2025-03-07"
    assert iso_date("2025-03-07T10:00:00Z") == "2025-03-07"
    for not_a_date in ("2025-13-40", "soon", "v2", 2025, None):
        assert iso_date(not_a_date) is None, not_a_date


def test_recency_compares_pages_that_name_their_date_key_differently() -> None:
    old = SourceInfo.from_metadata(
        "kb/care/dental.md", {"title": "Dental cleaning", "last_reviewed": "2023-11-02"}
    )
    new = SourceInfo.from_metadata(
        "kb/news/dental-2025.md", {"title": "Dental prices", "revised": "2 May 2025"}
    )
    decision = resolve_authority([old, new])
    assert decision.winner == "kb/news/dental-2025.md" and decision.rule == "recency"


def test_a_knowledge_base_entry_takes_its_date_from_its_own_key() -> None:
    ws = Workspace.from_files(
        {
            "system_prompt.md": PROMPT,
            "kb/care/microchip.md": "---\ntitle: Microchipping\nlast_checked_date: 2024-08-19\n---\n# Microchipping\n\nA microchip costs EUR 25.\n",
        }
    )
    assert ws.kb_entry("kb/care/microchip.md").modified == "2024-08-19"


def test_a_newer_notice_with_its_own_date_key_corrects_the_stale_page() -> None:
    ws = Workspace.from_files(
        {
            "system_prompt.md": PROMPT,
            "kb/care/nail-trim.md": "---\ntitle: Nail trim\nstatus: official\nlast_edited: 2024-03-11\n---\n# Nail trim\n\nA nail trim for a dog costs EUR 12.\n",
            "kb/care/nail-trim-price-notice.md": "---\ntitle: Nail trim price notice\nstatus: official\nlast_edited: 2025-01-15\n---\n# Nail trim price notice\n\nFrom January 2025, a nail trim for a dog costs EUR 15.\n",
            "kb/visits/parking.md": "# Parking\n\nThe clinic has six free parking spaces.\n",
        }
    )
    s = Chat(ws, "clinic").user("What does a nail trim cost for my dog?").search("nail trim dog cost")
    conv = (
        s.agent("A nail trim for a dog costs EUR 12.")
        .user("the receptionist told me EUR 15, not EUR 12")
        .build()
    )
    rec = recommend(conv, diagnose(conv, detect_offline(conv)), ws)
    assert rec.operation == Operation.UPDATE and rec.target_path == "kb/care/nail-trim.md"
    assert rec.authoritative_source == "kb/care/nail-trim-price-notice.md" and rec.authority_rule == "recency"


# --- allowed values and the rejected argument in tool errors -----------------------------------


def test_lists_introduced_by_an_arrow_or_a_dash_or_quoted_as_a_run_are_read() -> None:
    assert enumeration("Unknown species 'feline'. Valid species -> CANINE | FELINE_DOMESTIC | AVIAN") == [
        "CANINE",
        "FELINE_DOMESTIC",
        "AVIAN",
    ]
    assert enumeration("bad slot => morning, afternoon, evening") == ["morning", "afternoon", "evening"]
    assert enumeration("Room not found — ward_a / ward_b / isolation") == ["ward_a", "ward_b", "isolation"]
    assert enumeration("Input should be 'small', 'medium' or 'large'") == ["small", "medium", "large"]
    # an arrow before a sentence, or one quoted value, is no list
    assert enumeration("Request failed -> the clinic calendar is offline") == []
    assert enumeration("Value 'tiny' is not valid") == []


def test_an_arrow_list_gives_the_value_the_rejected_one_resembles() -> None:
    out = "Rejected: species 'FELINE' is unknown. Valid species -> CANINE | FELINE_DOMESTIC | AVIAN"
    assert tool_error_delta(out, json.dumps({"pet_id": "P-7", "species": "FELINE"})) == (
        "FELINE_DOMESTIC",
        "FELINE",
    )


def test_the_argument_an_error_rejects_without_quoting_it_is_found_in_the_call() -> None:
    call = json.dumps({"pet_id": "P-7", "vet": "Dr Okafor", "slot": "2026-03-02T09:00"})
    structured = json.dumps(
        {
            "error": {
                "code": 422,
                "message": "unexpected argument vet",
                "required": ["pet_id", "vet_id", "slot"],
            }
        }
    )
    assert tool_error_delta(structured, call) == ("vet_id", "vet")
    text = "TypeError: book_visit() got an unexpected keyword vet. Accepted: pet_id, vet_id, slot"
    assert tool_error_delta(text, call) == ("vet_id", "vet")
    # nothing sent outside the listed fields, and no bare name: the rejected argument stays unknown
    listed = json.dumps({"error": "bad request", "required": ["pet_id", "vet", "slot"]})
    assert tool_error_delta(listed, call)[1] is None


# --- what the user meant -----------------------------------------------------------------------


def test_a_free_relative_after_not_is_no_rejected_value() -> None:
    _, expected, got, _ = correction_delta(
        "not what I was after lol. the puppy vaccine course takes 3 weeks", "A rabies shot costs EUR 40."
    )
    assert expected == "3 weeks" and got == "EUR 40"


def test_the_subject_the_user_meant_ends_where_a_bracket_or_dash_opens() -> None:
    assert claimed_subject("no, I meant the weekend boarding rate (EUR 30 per night)", "EUR 30") == (
        "weekend boarding rate"
    )
    assert claimed_subject("I was asking about the dental check - EUR 45", "EUR 45") == "dental check"


def test_a_repair_that_restates_what_was_meant_with_a_new_value_is_a_correction() -> None:
    question = "How much to keep my cat over Saturday night?"
    answer = "A standard consultation takes 20 minutes."
    repair = "you misunderstood me, I meant the weekend boarding rate (EUR 30 per night)"
    assert corrected(reply(answer, repair, question)) == {"n4"}
    # a repair with no value, or with the value the answer already gave, states nothing new
    assert corrected(reply(answer, "what I meant was for the cat, not the dog", question)) == set()
    assert corrected(reply(answer, "sorry, I meant the consultation (20 minutes)", question)) == set()


def test_a_page_titled_with_the_words_the_user_uses_is_the_one_to_make_findable() -> None:
    ws = Workspace.from_files(
        {
            "system_prompt.md": PROMPT,
            "kb/stays/boarding-weekends.md": "---\ntitle: Boarding at weekends\n---\n# Boarding at weekends\n\nPets staying Friday to Monday pay EUR 30 per night.\n",
            "kb/visits/consultation.md": "---\ntitle: Consultation fee\n---\n# Consultation fee\n\nA standard consultation costs EUR 55.\n",
            "kb/visits/parking.md": "# Parking\n\nThe clinic has six free parking spaces.\n",
        }
    )
    s = (
        Chat(ws, "clinic")
        .user("How much to keep my cat over Saturday night?")
        .search("keep cat Saturday night standard")
    )
    conv = (
        s.agent("A standard consultation costs EUR 55.")
        .user("no, I meant the weekend boarding rate (EUR 30 per night)")
        .build()
    )
    rec = recommend(conv, diagnose(conv, detect_offline(conv)), ws)
    assert rec.operation == Operation.UPDATE and rec.target_path == "kb/stays/boarding-weekends.md"


# --- objections read from structure ------------------------------------------------------------


def test_a_reproach_for_what_was_left_undone_is_an_objection() -> None:
    for sentence in (
        "so the whole course has to be redone?? you could've mentioned that",
        "You should have checked the microchip first.",
        "you could at least have asked which pet",
    ):
        assert behavioural_objection(sentence), sentence
    for sentence in ("you could have a look at the price list", "you could have one free check-up a year"):
        assert not behavioural_objection(sentence), sentence


def test_an_exposure_the_agent_caused_is_an_objection() -> None:
    for sentence in ("everyone in the waiting room can read that now", "now anybody can open it"):
        assert behavioural_objection(sentence), sentence
    for sentence in ("Anyone can book that online", "Can someone see that now?", "people can park there"):
        assert not behavioural_objection(sentence), sentence


def test_a_permission_asked_about_what_was_just_done_is_an_objection() -> None:
    assert behavioural_objection("are staff even allowed to cancel a surgery like that?")
    assert behavioural_objection("Is someone permitted to move an appointment that way?")
    # a permission asked about a new action is a question for information
    assert not behavioural_objection("Is anyone allowed to collect my dog for me?")


def test_nobody_having_done_what_was_due_is_an_objection() -> None:
    assert behavioural_objection("hold on, no one warned us about the sedation fee")
    assert behavioural_objection("nobody said the lab results take a week")
    assert not behavioural_objection("nobody's home on Mondays, can the courier come Tuesday?")


def test_another_sources_account_set_against_the_agents_is_a_conflict() -> None:
    assert relayed_conflict("the nurse on the phone said walk-ins are fine, so which is it")
    assert relayed_conflict("My neighbour says you close at noon on Sundays. Which one is right?")
    # the user's or the agent's own words, or a choice with no account against it, are not
    assert not relayed_conflict("You said Tuesday earlier, which is it?")
    assert not relayed_conflict("which is it, the blue form or the green one?")
    conv = reply(
        "Walk-ins are never accepted.", "the nurse on the phone said walk-ins are fine, so which is it"
    )
    assert corrected(conv) == {"n4"}
    kind, _, _, rule = correction_delta(conv.nodes[-1].content, conv.nodes[-2].content)
    assert kind == "behaviour" and rule
    assert diagnose(conv, detect_offline(conv)).root_node_id == "n1"


def test_the_new_objection_forms_are_detected_after_an_answer() -> None:
    answer = "Done, Biscuit's dental surgery is cancelled."
    for complaint in (
        "wait, so the deposit is gone?? you could've warned me",
        "is anyone allowed to just cancel surgeries like that?",
        "how could you possibly know that from here?",
        "hold on, nobody told me about the deposit",
    ):
        assert corrected(reply(answer, complaint)) == {"n4"}, complaint
    # plain questions and thanks after the same answer are not complaints
    for fine in ("ok, can I rebook for next week?", "thanks, how do I get the deposit back?"):
        assert corrected(reply(answer, fine)) == set(), fine


def test_a_weak_cue_after_an_indefinite_article_in_a_question_describes_something_new() -> None:
    answer = "Prescription refills are ready within 2 days."
    assert corrected(reply(answer, "Can I get a refund for a wrong prescription refill?")) == set()
    # the cue judging what the agent gave still counts
    assert corrected(reply(answer, "That's wrong, refills are ready the same day.")) == {"n4"}


def test_a_look_up_reported_empty_in_other_words_states_absence() -> None:
    asked = "Do you do hydrotherapy for older dogs?"
    assert states_absence("Sorry, I wasn't able to dig up anything on water treatments.", asked)
    assert states_absence("I can't see any mention of that service here.", asked)
    assert not states_absence("I couldn't agree more, it helps with 3 sessions a week.", asked)
    s = (
        Chat(bare(), "clinic")
        .user(asked)
        .agent("Sorry, I wasn't able to dig up anything on water treatments.")
    )
    assert corrected(s.user("it's EUR 35 a session, the flyer at reception says so").build()) == {"n4"}


def test_a_kit_announcement_is_dated_after_the_page_it_updates_whatever_the_date_key() -> None:
    """The kit generator dates an announcement a year after its page, read with the same date rule
    as the pipeline, so the recency label holds for pages dated under any key."""
    kit = Path(__file__).resolve().parents[2] / "examples" / "mobile_plans_kit" / "kit.yaml"
    checked = 0
    for seed in range(6):
        checked += _announcements_after_their_pages(generate_kit_benchmark(load_kit(kit), seed=seed))
    assert checked


def _announcements_after_their_pages(bench: KitBenchmark) -> int:
    checked = 0
    for trace in bench.traces:
        fix = trace.ground_truth.fix
        if fix is None or fix.authority_rule != "recency" or not fix.authoritative_source:
            continue
        ws = bench.workspace(trace)
        assert fix.target_path is not None
        page, notice = ws.kb_entry(fix.target_path), ws.kb_entry(fix.authoritative_source)
        if page.modified is None:
            continue  # a page without front matter has no date to be older than
        assert notice.modified and notice.modified > page.modified, (page.path, page.modified)
        checked += 1
    return checked


# --- more objection shapes ---------------------------------------------------------------------


def test_a_negative_question_with_an_obligation_on_someone_else_is_an_objection() -> None:
    assert behavioural_objection("hmm, shouldn't a vet look at the x-ray first?")
    assert behavioural_objection("Doesn't that need the owner's signature?")
    assert behavioural_objection("wait, don't you need my consent for that?")
    assert not behavioural_objection("Shouldn't I bring her lead?")
    assert not behavioural_objection("Don't you have a bigger crate?")


def test_a_skipped_step_named_with_without_is_an_objection_unless_the_user_asks_for_information() -> None:
    assert behavioural_objection("wait, without even checking her weight first?")
    assert behavioural_objection("Did you just book it without asking me?")
    assert not behavioural_objection("How much can I give her without asking the vet?")
    assert not behavioural_objection("Can we come in without telling reception?")


def test_a_denied_request_or_an_uninformed_user_is_an_objection() -> None:
    assert behavioural_objection("I never agreed to a second scan")
    assert behavioural_objection("we were never told the x-ray costs extra")
    assert not behavioural_objection("I never asked before, what does a scan cost?")
    assert not behavioural_objection("I was told to come at nine.")
    assert not behavioural_objection("also, I wasn't told the pick-up time when I booked, what is it?")


def test_others_being_able_to_just_do_it_is_an_objection() -> None:
    assert behavioural_objection("so anybody can just pick up my dog?")
    assert not behavioural_objection("can anyone else pick up my dog?")


def test_a_relayed_account_of_the_opposite_polarity_contradicts_the_answer() -> None:
    from causal_middleware.context.objections import relayed_contradiction

    answer = "Yes, grapes are a fine treat for dogs."
    assert relayed_contradiction("my breeder said never give dogs grapes", answer)
    # the same polarity, another subject, or a relayed account asked about are not contradictions
    assert not relayed_contradiction("my breeder said dogs love grapes", answer)
    assert not relayed_contradiction("my neighbour said the clinic isn't busy on Mondays", answer)
    assert not relayed_contradiction("my breeder said never give dogs grapes, is that true?", answer)
    conv = reply(answer, "my breeder said never give dogs grapes", "Can my dog have grapes?")
    assert corrected(conv) == {"n4"}
    assert correction_delta(conv.nodes[-1].content, answer)[0] == "behaviour"


def test_no_one_at_the_start_of_a_reply_is_a_subject_not_a_lead_in() -> None:
    answer = "Your claim for the x-ray was approved."
    assert corrected(reply(answer, "really? no one even read the invoice")) == {"n4"}
    assert corrected(reply(answer, "no one else needs one, thanks")) == set()


# --- values proposed and stated in other shapes -------------------------------------------------


def test_compound_durations_are_values_and_keep_their_form_when_replaced() -> None:
    from causal_middleware.context.recommendation import replace_value
    from causal_middleware.context.text import find_values, same_value

    assert find_values("Kittens get a 6-week booster.") == [("duration", "6-week")]
    assert same_value("6-week", "6 weeks") and not same_value("6-week", "8 weeks")
    assert replace_value("Boosters follow a 6-week course.\n", "6-week", "8 weeks", set()) == (
        "Boosters follow a 8-week course.\n"
    )


def test_a_value_for_the_answers_subject_is_a_contradiction_in_more_sentence_shapes() -> None:
    question = "How long after the jab can she go out?"
    answer = "She can go out 7 days after the jab."
    for complaint in (
        "last time we did this it was 14 days",  # an anaphoric copula inside a personal sentence
        "odd, the card from the nurse has 14 days",  # an interjection set off by a comma
        "I've a text from you saying 14 days",  # reported with a participle
        "isn't it 14 days?",  # a negative question proposing a value
        "14 days, surely?",  # a value with a tag
    ):
        assert corrected(reply(answer, complaint, question)) == {"n4"}, complaint
    for fine in (
        "14 days would have been easier",
        "is it 14 days for puppies too?",
        "great, so in 7 days then",
    ):
        assert corrected(reply(answer, fine, question)) == set(), fine


def test_a_reply_about_the_agents_own_sources_states_absence() -> None:
    asked = "Do you board rabbits?"
    assert states_absence("I'm afraid that's not something our pages cover.", asked)
    assert states_absence("Sorry, my search returned nothing there.", asked)
    assert not states_absence("We don't board animals under 2 kg.", asked)
    assert not states_absence("I couldn't agree more, they are lovely.", asked)


def test_the_subject_the_user_wanted_is_read_after_more_verbs() -> None:
    assert claimed_subject("that's the dental price, I wanted the scale and polish - EUR 60", "EUR 60") == (
        "scale and polish"
    )
    assert claimed_subject("I was after the weekend rate: EUR 30", "EUR 30") == "weekend rate"


# --- more tool-error shapes ---------------------------------------------------------------------


def test_tool_errors_in_further_common_shapes() -> None:
    def delta(out: str, **args: object) -> tuple[str | None, str | None]:
        return tool_error_delta(out, json.dumps(args))

    # an unquoted value after "got", squashed to an allowed value
    assert delta("Error 400: ward must be one of [WARD_A, WARD_B, ICU] (got WARDA)", ward="WARDA") == (
        "WARD_A",
        "WARDA",
    )
    # a plural noun and "are" introduce the list; the rejected value is named bare
    assert delta("No such kennel: large_plus (kennels are small, medium, large)", kennel="large_plus") == (
        "large",
        "large_plus",
    )
    # a message filed under the field's name
    assert delta(
        json.dumps({"errors": {"species": ["is not a valid choice; choose from CANINE_DOG, FELINE_CAT"]}}),
        species="CANINE",
    ) == ("CANINE_DOG", "CANINE")
    # an expected name written as code, and a sent field name never taken for the expected value
    assert delta("KeyError: 'postcode' -- this endpoint takes zip_code", postcode="1011") == (
        "zip_code",
        "postcode",
    )
    assert delta(
        "Bad argument 'visit_on': expected format YYYY-MM-DD, got 02/03/2026", visit_on="02/03/2026"
    ) == (
        "YYYY-MM-DD",
        "02/03/2026",
    )
    # a field an error points at in a location list
    assert delta(
        json.dumps({"detail": [{"loc": ["body", "colour"], "msg": "extra fields not permitted"}]}),
        pet_id="P-7",
        colour="tabby",
    ) == (None, "colour")
    # a pipe-joined run of values is a list wherever it stands
    assert enumeration("unknown size XXL for crate (expected S|M|L)") == ["S", "M", "L"]


def test_rhetorical_questions_missing_safeguards_and_misgivings_are_objections() -> None:
    for sentence in (
        "is that even safe for a puppy?",  # "even" after the subject of a polar question
        "lol how would a website know that",  # the agent's grounds doubted
        "why would the groomer need my home address",  # "why would" about someone else
        "wow ok, no vet check or anything?",  # an expected safeguard found missing
        "hang on, there was no consent form at all?",
        "without a signature? odd",
        "hmm, that sounds a bit risky",  # a misgiving about what was said
        "I'm not comfortable with a chatbot booking surgery",
        "I only asked what a scan would cost!",  # the agent went beyond the request
    ):
        assert behavioural_objection(sentence), sentence
    for sentence in (
        "why would I need a carrier for that?",
        "how could I get there by bus?",
        "great, no rush at all",
        "that sounds great",
        "I just wanted to confirm that, thanks",
    ):
        assert not behavioural_objection(sentence), sentence


def test_a_page_titled_with_one_word_of_what_the_user_names_is_found_too() -> None:
    ws = Workspace.from_files(
        {
            "system_prompt.md": PROMPT,
            "kb/care/microchipping.md": "# Microchipping\n\nImplanting a chip takes a minute and costs EUR 25.\n",
            "kb/visits/consultation.md": "# Consultation fee\n\nA standard consultation takes 20 minutes.\n",
            "kb/visits/parking.md": "# Parking\n\nThe clinic has six free parking spaces.\n",
        }
    )
    s = (
        Chat(ws, "clinic")
        .user("How long to get my puppy an ID implant, a standard visit?")
        .search("standard visit")
    )
    conv = s.agent("A standard consultation takes 20 minutes.").user(
        "no, I meant the microchipping price (EUR 25)"
    )
    built = conv.build()
    rec = recommend(built, diagnose(built, detect_offline(built)), ws)
    assert rec.operation == Operation.UPDATE and rec.target_path == "kb/care/microchipping.md"


def test_tool_errors_as_python_literals_and_bulleted_lists() -> None:
    call = json.dumps({"pet_id": "P-7", "ward": "WARDA"})
    literal = "ValidationError: {'field': 'ward', 'error': 'unknown ward', 'allowed': ['WARD_A', 'ICU']}"
    assert tool_error_delta(literal, call) == ("WARD_A", "WARDA")
    bulleted = "Invalid ward WARDA.\nAllowed values:\n- WARD_A\n- WARD_B\n- ICU\n"
    assert tool_error_delta(bulleted, call) == ("WARD_A", "WARDA")
    # an error that names the field but lists field names rejects the field itself
    fields = "unknown parameter: wrd. Valid parameters are pet_id, ward"
    assert tool_error_delta(fields, json.dumps({"pet_id": "P-7", "wrd": "ICU"})) == ("ward", "wrd")
