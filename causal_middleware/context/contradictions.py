"""Contradictions: a user statement giving another value than the agent's last answer, no cue words needed."""

from __future__ import annotations

import re

from causal_middleware.context.conversation import Conversation, ConversationNode, NodeType
from causal_middleware.context.replies import replies
from causal_middleware.context.signals import Signal, SignalType
from causal_middleware.context.statements import (
    CHOICE_QUESTION,
    EXPERIENCED,
    LEAD_IN,
    REPORTED,
    STATEMENT,
    asks_for_information,
    declarative_question,
    statement_kind,
)
from causal_middleware.context.text import (
    MEASURED_KINDS,
    expand_informal,
    find_values,
    in_answer_units,
    quote,
    same_value,
    sentences,
    stem,
    term_seq,
)

_I = re.IGNORECASE

CONTRADICTION_KINDS = MEASURED_KINDS

# A hypothetical states no value ("24 months would have been nicer", "if it were 2 days ...").
# A modal perfect needs a participle: "I could have up to 6 points" states a permission, not a
# hypothetical.
_HYPOTHETICAL = re.compile(
    r"\b(?:would|could|might)(?:'ve|\s+have)\s+(?:not\s+|never\s+|just\s+|already\s+)?"
    r"(?:been|had|done|gone|[a-z]+(?:ed|en|wn|ne|t|d))\b|^if\b|\bwish\b",
    _I,
)
# A value proposed as a question the asker expects agreement with: a negative question about the
# answer's subject ("isn't it 30 days?", "wasn't that raised to 30 days?") or a value with a tag
# ("30 days, surely?", "30 days, right?").
_PROPOSAL = re.compile(
    r"^(?:isn't|wasn't|aren't|weren't|doesn't|didn't|hasn't|haven't|shouldn't|won't)\s+(?:it|that|this|they)\b|"
    # ... or about a thing named ("isn't the day pass $20?", "wasn't your deposit 150?")
    r"^(?:isn't|wasn't|aren't|weren't)\s+(?:the|your|its|their)\s+[^?]*?\d[^?]*\?+\s*$|"
    # a belief put as a question ("I thought it was 12 hours now?")
    r"^i\s+(?:thought|believed|was told|heard)\b|"
    r",\s*(?:surely|right|no|correct|isn't it|wasn't it|aren't they)\s*\?+\s*$|"
    # any negative tag ("..., hasn't it?", "..., didn't they?")
    r",\s*(?:is|was|are|were|has|have|had|does|do|did|would|could|should)n't\s+(?:it|that|this|they)\s*\?+\s*$",
    _I,
)
# A question whether what the answer states has changed ("Did something change?", "has that been
# changed recently?"): the user knows another value and asks why the answer differs from it.
_CHANGE_QUESTION = re.compile(
    r"^(?:did|has|have|was|is)\s+(?:something|anything|that|this|it|they|the\s+\w+)\s+"
    r"(?:just\s+|recently\s+|been\s+)*(?:change|changed|updated|get changed|got changed)\b[^?]*\?+$",
    _I,
)
# A value stated for the answer's subject inside a longer sentence ("last time I looked it was 30
# days"): an anaphoric subject and a copula right before it.
_ANAPHORIC_COPULA = re.compile(
    r"\b(?:it|that|this|they)(?:'s|'re| is| was| are| were| has been| had been| used to be|"
    # ... or a verb that states an amount ("last time it only took 3 days", "it cost me 40")
    r"(?:\s+(?:only|just|actually|still|always|usually|never))?\s+(?:took|takes|lasted|lasts|cost|costs)(?:\s+(?:me|us))?)\s+"
    r"(?:now\s+|actually\s+|still\s+|only\s+|just\s+|really\s+)?$",
    _I,
)


def contradictions(conversation: Conversation, found: list[Signal]) -> list[Signal]:
    """A user statement giving a different value than the agent's last answer: no cue words needed.

    A sentence contradicts the answer when it names the answer's own value against another
    ("24 hours, not 12 hours"), or asserts a value of the same kind (sizes compared by magnitude:
    "2 GB" is not "2000 MB"'s contradiction) as a statement about the world (it opens with a
    subject, not a verb or a request: "Your site says 48 hours now") or as a personal statement
    that refers back to the answer (shares a word with it). A sentence that names a subject and
    asserts a value of another kind than the answer's ("The restocking fee is 15%" after "30 days")
    says the agent answered something else. New requests ("move $200 to savings", "I'd like to
    transfer $500") and questions are not contradictions.
    """
    out = []
    for last_agent, n in replies(conversation, found):
        opening = sentences(n.content)[:1]
        if _acted_on(conversation, n):
            continue  # the agent called a tool with the turn's own details: it was a request
        if opening and (asks_for_information(opening[0]) or statement_kind(opening[0]) == "request"):
            # a turn that opens with a new question or request ("I'd like to book ... on Dec 8"):
            # its values are that request's details
            continue
        said = find_values(last_agent.content)
        said_strong = [(k, v) for k, v in said if k in CONTRADICTION_KINDS]
        answer_terms = set(term_seq(last_agent.content))
        # "... Did something change?" asks nothing new: it asks why the answer differs
        asks = any(
            "?" in s and not _CHANGE_QUESTION.match(LEAD_IN.sub("", s.strip())) for s in sentences(n.content)
        )
        hit: tuple[str, list[str], float] | None = None
        for sent in sentences(n.content):
            shape = statement_kind(sent)
            body = LEAD_IN.sub("", expand_informal(sent).strip())
            if shape == "question" and (_PROPOSAL.search(body) or declarative_question(sent)):
                shape = "assertion"
            if shape in ("question", "request") or _HYPOTHETICAL.search(body):
                continue
            if not asks and (
                hit := _same_attribute(sent, last_agent.content)
                or _same_counted(sent, last_agent.content)
                or _same_attribute_after(sent, last_agent.content)
                or _refilled(sent, last_agent.content)
            ):
                break
            values = in_answer_units(_amounts(find_values(sent), sent), said)
            if not any(same_value(v, a) for _, v in values for _, a in said):
                # no contrast with the answer's own value: only numbers in complement position
                values = in_answer_units(_amounts(_complement_numbers(sent), sent), said)
            if shape in ("other", "personal") and any(
                _ANAPHORIC_COPULA.search(sent[: sent.find(v)]) for _, v in values if v in sent
            ):
                shape = "assertion"
            if shape == "personal" and _CONVICTION.match(body):
                shape = "assertion"  # "I'm pretty sure the fee is 20%": a claim about the world
            contrast = any(same_value(v, a) for _, v in values for _, a in said)
            if shape == "personal" and asks and not contrast and not REPORTED.search(sent):
                continue  # "I was 10 minutes late back. Can the fee come off?": the scene for a question
            terms = set(term_seq(sent))
            refers = not terms or bool(terms & answer_terms)
            stated = bool(STATEMENT.search(sent))
            # "The letter says X", "I was told X": the user reports what a source states,
            # an assertion about the world whatever the sentence opens with.
            # "last week I paid X", "I've always been charged X": the user's own experience of it
            # (an experience told before a question sets the scene for it, it disputes nothing)
            reported = bool(REPORTED.search(sent) or (EXPERIENCED.search(sent) and "?" not in n.content))
            stated = stated or reported
            if not (contrast or shape == "assertion" or (stated and (refers or reported))):
                continue
            hit = next(
                (
                    (value, same, 0.8)
                    for kind, value in values
                    if kind in CONTRADICTION_KINDS
                    and (same := [v for k, v in said if k == kind])
                    and not any(same_value(v, value) for v in same)
                ),
                None,
            )
            if hit is None and said_strong and shape == "assertion" and stated and terms:
                hit = next(
                    (
                        (value, [said_strong[0][1]], 0.75)
                        for kind, value in values
                        if kind in CONTRADICTION_KINDS and kind not in {k for k, _ in said_strong}
                    ),
                    None,
                )
            # "My GPA is 3.1. What can I do?": the user's own figure sets the scene for a question
            own_case = shape == "personal" and "?" in n.content and not reported
            if hit is None and not said_strong and stated and (refers or contrast) and not own_case:
                hit = _other_count(values, said)
            if hit:
                break
        if hit is None and CHOICE_QUESTION.search(n.content):
            hit = _choice_against(n.content, said)
        if hit is None:
            hit = _turn_contrast(n.content, said)
        if hit is None and "?" not in n.content:
            hit = _despite(n.content, last_agent.content)
        if hit is None:
            hit = _echo_rejected(n.content, last_agent.content)
        if hit is None:
            hit = _moved_to(n.content, said)
        if hit:
            out.append(
                Signal(
                    type=SignalType.CORRECTION,
                    turn=n.turn,
                    node_id=n.id,
                    evidence=quote(f"{n.content} (the agent said {hit[1][0]})"),
                    confidence=hit[2],
                )
            )
    return out


def _choice_against(text: str, said: list[tuple[str, str]]) -> tuple[str, list[str], float] | None:
    """ "We booked around opening day, 12 December. Which one is it?": the user sets another value
    of the kind the answer stated against it and asks which holds, a dispute of the answer's value
    however the value is framed (a personal account, an aside)."""
    for kind, value in find_values(text):
        same = [v for k, v in said if k == kind]
        if kind in CONTRADICTION_KINDS and same and not any(same_value(v, value) for v in same):
            return value, same, 0.8
    return None


# A belief held now, stated as one ("I'm pretty sure ...", "I am certain that ..."): what follows is
# the user's claim about the world, not an account of themselves.
_CONVICTION = re.compile(
    r"^i(?:'m|\s+am)\s+(?:pretty\s+|quite\s+|fairly\s+|very\s+|absolutely\s+|completely\s+)?"
    r"(?:sure|certain|positive|confident)\b(?!\s+(?:if|whether|about|of|how|what|why|when|where|who)\b)",
    _I,
)

# "..., not three." / "... - not the first." closing a sentence: the words after "not" are rejected.
_CLOSING_NOT = re.compile(
    r"(?:,|;|\s[-\u2013\u2014])\s*(?:and\s+|but\s+)?not\s+(?:the\s+|a\s+|an\s+)?"
    r"(?P<x>[\w'%£$€.-]+(?:\s+[\w'%£$€.-]+){0,3}?)\s*[.!]*$",
    _I,
)
_WORD = re.compile(r"[\w'%£$€.-]+")


def _echo_rejected(text: str, answer: str) -> tuple[str, list[str], float] | None:
    """A statement that ends by rejecting the answer's own words ("I only got two keys when I
    joined, not three." after "... comes with three keys"): the closing "not X" names what the
    agent said, and the clause before it puts something the answer did not say in its place. No
    value kind is needed: the echo of the answer's words is the contrast."""
    said = {w.lower().strip(".") for w in _WORD.findall(answer)}
    for sent in sentences(text):
        if "?" in sent:
            continue
        m = _CLOSING_NOT.search(sent.strip())
        if m is None:
            continue
        rejected = [w.lower().strip(".") for w in _WORD.findall(m.group("x"))]
        if not rejected or not all(w in said for w in rejected):
            continue
        if not re.search(r"(?<![\w'])" + re.escape(m.group("x").strip(" .")) + r"(?![\w'])", answer, _I):
            continue  # the words, but not as the answer put them side by side
        before = {w.lower().strip(".") for w in _WORD.findall(sent[: m.start()])}
        if before - said - _FUNCTION_WORDS:
            return m.group("x").strip(" ."), [m.group("x").strip(" .")], 0.85
    return None


# "They moved the classes to the second Tuesday", "it's been switched to 9am": a change of what the
# answer stated, told by a third party's act (not "I moved ...": the user's own doing).
_MOVED_TO = re.compile(
    r"^(?:they|it|that|this|someone|the\s+[a-z]+(?:\s+[a-z]+)?)(?:'s|'ve|\s+have|\s+has)?(?:\s+been)?\s+"
    r"(?:moved|switched|shifted|changed|pushed|brought|put|rescheduled|reset)\b[^.;!?]*?\bto\s+(?P<to>[^.;!?]+)",
    _I,
)


def _moved_to(text: str, said: list[tuple[str, str]]) -> tuple[str, list[str], float] | None:
    """A change of the answer's value told as an act ("They moved the classes to the second
    Tuesday of the month." after "... the last Tuesday"): the new value is of a kind the answer
    stated, and another. Any kind counts, weekdays too: the change verb makes it a schedule."""
    for sent in sentences(text):
        if "?" in sent:
            continue
        m = _MOVED_TO.match(LEAD_IN.sub("", expand_informal(sent).strip()))
        if m is None:
            continue
        for kind, value in find_values(m.group("to")):
            same = [v for k, v in said if k == kind]
            if same and not any(same_value(value, v) for v in same):
                return value, same, 0.85
    return None


_FUNCTION_WORDS = frozenset(
    "i me my we our you your it its they them their he she his her a an the and or but so to of in on at "
    "for with by from is are was were be been am do did does have has had only just".split()
)


# A duration that dates an event ("10 minutes ago", "3 weeks back") says when, not how long.
_AGO = re.compile(r"\s*(?:ago|back|earlier|before now)\b", _I)


def _amounts(values: list[tuple[str, str]], text: str) -> list[tuple[str, str]]:
    """``values`` less the durations that date an event ("the table was ready 10 minutes ago")."""
    out = []
    for kind, value in values:
        at = text.find(value)
        if kind == "duration" and at >= 0 and _AGO.match(text, at + len(value)):
            continue
        out.append((kind, value))
    return out


# A token that identifies something the user gives: with a digit, three characters or more
# ("Q-2041-77", "2026-12-03", "AB12345").
_DETAIL = re.compile(r"(?<![\w-])(?=[\w-]*\d)[\w][\w-]{2,}(?![\w-])")


def _acted_on(conversation: Conversation, turn: ConversationNode) -> bool:
    """Whether the agent's next step after ``turn`` was a tool call carrying a detail the turn
    gave (an id, a reference, a date): the agent took the turn as a request and acted on it, so
    its values are the request's, not a correction of the answer before it."""
    details = set(_DETAIL.findall(turn.content))
    if not details:
        return False
    for node in conversation.nodes[conversation.index(turn.id) + 1 :]:
        if node.type == NodeType.USER:
            return False
        if node.type == NodeType.TOOL_CALL:
            return any(d in (node.content or "") for d in details)
    return False


# A question that asks for the reason of what the agent said ("why do you say ...", "how come ...").
_WHY_QUESTION = re.compile(r"\b(?:why|how come)\b", _I)
# A clause boundary inside a sentence: a comma, a semicolon or a dash.
_CLAUSE = re.compile(r"\s*(?:[,;]|\s[-\u2013\u2014])\s+")


def _turn_contrast(text: str, said: list[tuple[str, str]]) -> tuple[str, list[str], float] | None:
    """The turn names the answer's own value and, in another clause that states something (not
    the question it ends with, not a request or a hypothetical), a different value of the same
    kind: "30 hours was the old rule. They changed it to 24 hours.", "the email says 5 days, why do
    you say 3 days?". The two values side by side are the contrast, whatever the wording."""
    values = find_values(text)
    # a weekday or a quoted name counts when the turn names the answer's own one beside another
    # ("It used to be Tuesdays but it's Thursdays now")
    measured = [
        (k, v)
        for k, v in said
        if k in CONTRADICTION_KINDS
        or (k in ("weekday", "quoted") and any(same_value(v, t) for _, t in values))
    ]
    if not measured:
        return None
    # without the answer's own value beside it, only a source's account is a contrast ("your help
    # page says up to 2 hours, so why would I pay?")
    relayed_only = not any(same_value(v, a) for _, v in values for _, a in measured)
    for sent in sentences(text):
        clauses = [c for c in _CLAUSE.split(sent) if c.strip()]
        if sent.rstrip().endswith("?"):
            if _WHY_QUESTION.search(sent):
                # "how come you said €15 when the sign says €20?": a why-question holding both
                # values challenges the answer's
                clauses = [_WHY_QUESTION.sub("", sent)]
            else:
                clauses = clauses[:-1]  # the question itself
        for clause in clauses:
            body = LEAD_IN.sub("", expand_informal(clause).strip())
            shape = statement_kind(clause)
            if shape == "request" or _HYPOTHETICAL.search(body):
                continue
            if shape == "personal" and not (REPORTED.search(clause) or EXPERIENCED.search(clause)):
                continue  # the user's own plans or needs ("I'll need it in 5 days anyway")
            if relayed_only and not (REPORTED.search(clause) and _THIRD_PARTY_SOURCE.search(clause)):
                continue
            for kind, value in _amounts(find_values(clause), clause):
                same = [a for k, a in measured if k == kind]
                if same and not any(same_value(value, a) for a in same):
                    return value, same, 0.8
    return None


# A source other than the user: a named thing or person before the reporting verb ("your help page
# says", "the sign said", "Member Care told me"), not "I said".
_THIRD_PARTY_SOURCE = re.compile(
    r"\b(?!i\b|we\b|you\b)[a-z]+\s+(?:says?|said|states?|stated|shows?|showed|reads|lists?|listed|told|tells|"
    r"mentions?|mentioned|confirms?|confirmed|wrote|displays|displayed|posted)\b",
    _I,
)


# Words that sit between an attribute and its value ("a GPA of exactly 3.5", "the fee is about 40").
_LINK_WORDS = {"of", "is", "was", "are", "were", "be", "exactly", "only", "just", "about", "around", "at", "least",
               "most", "a", "an", "the", "to", "with", "than", "over", "under", "below", "above"}  # fmt: skip
# The user as the subject: their own figure describes their case ("I have a GPA of 3.1 now").
_OWN_CASE = re.compile(r"^(?:i|i'm|i've|i'd|we|we're|we've|we'd)\b", _I)
_POSSESSIVE = re.compile(r"\b(?:my|our|his|her|their|your)\s+$", _I)


def _attribute_before(text: str, at: int) -> tuple[list[str], str]:
    """The two content words right before position ``at`` (link words skipped) and the text before them."""
    words = list(re.finditer(r"[A-Za-z][A-Za-z'-]*", text[:at]))
    picked: list[re.Match[str]] = []
    for w in reversed(words):
        if len(picked) == 2:
            break
        if w.group(0).lower() in _LINK_WORDS and not picked:
            continue
        if w.group(0).lower() in _LINK_WORDS:
            break
        picked.append(w)
    if len(picked) < 2:
        return [], ""
    return [stem(w.group(0).lower()) for w in reversed(picked)], text[: picked[-1].start()]


def _same_attribute(sentence: str, answer: str) -> tuple[str, list[str], float] | None:
    """A bare number given for the attribute the answer quantified, named by the same two words
    right before it ("you need a term GPA of 3.30" -> "my friend got on with a term GPA of exactly
    3.50"): a value for the answer's own attribute, not a new detail. The user's own figure
    ("my GPA is 3.1") describes their case, not the rule."""
    targets = []
    for kind, value in find_values(answer):
        if kind != "number" or _YEAR.fullmatch(value):
            continue
        attr, _ = _attribute_before(answer, answer.find(value))
        if attr:
            targets.append((attr, value))
        label = _label_before(answer, answer.find(value))
        if label:
            targets.append(([label], value))
    if not targets:
        return None
    if _OWN_CASE.match(LEAD_IN.sub("", expand_informal(sentence).strip())):
        return None
    for kind, value in find_values(sentence):
        if kind != "number" or _YEAR.fullmatch(value):
            continue
        attr, before = _attribute_before(sentence, sentence.find(value))
        label = _label_before(sentence, sentence.find(value))
        for t_attr, t_value in targets:
            if value == t_value:
                continue
            if attr and t_attr == attr and not _POSSESSIVE.search(before):
                return value, [t_value], 0.8
            if label and t_attr == [label]:
                return value, [t_value], 0.8
    return None


# What the user holds now: their own case, not an account of the answer's attribute.
_HOLDS = re.compile(r"^(?:i|we)(?:'ve|\s+have)?\s+(?:have|own|hold|got)\b", _I)


def _refilled(sentence: str, answer: str) -> tuple[str, list[str], float] | None:
    """The answer's own words with another code, number word or ordinal after them, stated as a
    fact ("we sat in Row K last time" against "... are in Row H"): another value for the answer's
    attribute, not a new detail; a want or a plan states none."""
    if _WANT.search(sentence) or _HYPOTHETICAL.search(sentence):
        return None
    if _HOLDS.match(LEAD_IN.sub("", expand_informal(sentence).strip())):
        return None  # "I have Row K on my ticket": the user's own case
    from causal_middleware.context.delta import refilled_value

    pair = refilled_value(sentence, answer)
    if pair is None:
        return None
    # a bare number the user states of themselves is their own figure ("I have a deposit of 250")
    if not re.search(r"[A-Za-z]", pair[0]) and _OWN_CASE.match(
        LEAD_IN.sub("", expand_informal(sentence).strip())
    ):
        return None
    return pair[0], [pair[1]], 0.75


def _label_before(text: str, at: int) -> str | None:
    """The word a number is written right after, when it names the number's kind as a label
    does ("tier 2", "zone 4", "form 27"): the same label before another number is a value for the
    same thing. A link word ("of", "at") or a possessive ("my 3") is no label."""
    m = re.search(r"(?<![\w'-])([A-Za-z][A-Za-z-]*)\s+$", text[:at])
    if m is None or at < 0:
        return None
    word = m.group(1).lower()
    if word in _LINK_WORDS or not term_seq(word) or _POSSESSIVE.search(text[: m.start(1)]):
        return None  # "my plan 3" is the user's own case
    return stem(word)


def _attribute_after(text: str, end: int) -> list[str]:
    """The two content words right after position ``end`` ("£5 of driving credit" -> driving, credit)."""
    words = re.findall(r"[A-Za-z][A-Za-z'-]*", text[end:][:80])
    picked: list[str] = []
    for w in words:
        if w.lower() in _LINK_WORDS and not picked:
            continue
        if w.lower() in _LINK_WORDS or not term_seq(w):
            break
        picked.append(stem(w.lower()))
        if len(picked) == 2:
            break
    return picked if len(picked) == 2 else []


# The user's own wants and plans set no value for the answer's attribute.
_WANT = re.compile(r"\b(?:want|need|would like|'d like|hope|hoping|plan|planning|will|'ll|going to)\b", _I)


def _same_attribute_after(sentence: str, answer: str) -> tuple[str, list[str], float] | None:
    """A measured value followed by the same two words as a value of the answer ("£10 of driving
    credit" against "£5 of driving credit"): another value for the answer's own attribute, stated
    as a fact (an account of what someone gave, charged or allowed), not a want or a plan."""
    if _WANT.search(sentence) or _HYPOTHETICAL.search(sentence):
        return None
    targets = []
    pos = 0
    for kind, value in find_values(answer):
        at = answer.find(value, pos)
        pos = at + len(value) if at >= 0 else pos
        if kind in CONTRADICTION_KINDS and at >= 0 and (attr := _attribute_after(answer, at + len(value))):
            targets.append((kind, attr, value))
    if not targets:
        return None
    pos = 0
    for kind, value in find_values(sentence):
        at = sentence.find(value, pos)
        pos = at + len(value) if at >= 0 else pos
        if at < 0 or kind not in CONTRADICTION_KINDS:
            continue
        attr = _attribute_after(sentence, at + len(value))
        for t_kind, t_attr, t_value in targets:
            if attr and t_kind == kind and t_attr == attr and not same_value(value, t_value):
                return value, [t_value], 0.8
    return None


# Reported speech: a source's statement relayed by the user ("the letter says", "I was told",
def _other_count(
    values: list[tuple[str, str]], said: list[tuple[str, str]]
) -> tuple[str, list[str], float] | None:
    """A count that differs from the answer's one count ("up to 3 renewals" -> "it's 5 renewals" or
    "5, not 3"): the answer states a single bare number and the statement another (years aside)."""
    counts = {v for k, v in said if k == "number" and not _YEAR.fullmatch(v)}
    if len(counts) != 1:
        return None
    (count,) = counts
    for kind, value in values:
        if kind in ("number", "count") and not _YEAR.fullmatch(value) and value != count:
            return value, [count], 0.75
    return None


_YEAR = re.compile(r"(?:19|20)\d\d")


# Where a bare number states the value of what the answer was about: after a copula or a contrast
# word ("it's 100", "it was raised to 100", "only 100"), at the start of a contrast ("100, not 50"),
# or alone. Elsewhere it counts or names something else ("badge M-30155 shows 48213", "split it
# into 6 payments") and keeps no unit of the answer's.
_COMPLEMENT_BEFORE = re.compile(
    r"(?:\b(?:is|are|was|were|it's|that's|they're|be|been|now|not|only|just|actually|than|to|of|at|says?)"
    r"|[:,])\s*(?:about\s+|around\s+|roughly\s+|like\s+)?$",
    _I,
)
_COMPLEMENT_AFTER = re.compile(r"^\s*,?\s*(?:not|instead|rather)\b", _I)
_ALONE = re.compile(r"^\s*[.!?]*\s*$")


def _complement_numbers(sentence: str) -> list[tuple[str, str]]:
    """The sentence's values, bare numbers outside a complement position marked as counts that
    :func:`in_answer_units` leaves bare."""
    out: list[tuple[str, str]] = []
    pos = 0
    for kind, span in find_values(sentence):
        at = sentence.find(span, pos)
        pos = at + len(span) if at >= 0 else pos
        if kind == "number" and at >= 0:
            before, after = sentence[:at], sentence[at + len(span) :]
            alone = not before.strip() and _ALONE.match(after) is not None
            if not (alone or _COMPLEMENT_BEFORE.search(before) or _COMPLEMENT_AFTER.match(after)):
                kind = "count"
        out.append((kind, span))
    return out


def _counted(text: str) -> list[tuple[str, str, int]]:
    """``(noun stem, number, position)`` for each bare number that counts a noun ("3 instalments",
    "12 credits"); years aside."""
    out = []
    pos = 0
    for kind, value in find_values(text):
        at = text.find(value, pos)
        if at < 0:
            continue
        pos = at + len(value)
        if kind == "measure" and (lead := _RATE_HEAD.match(value)):
            # "4 passengers per car": a rate counts its first noun
            out.append((stem(lead.group(2).lower()).rstrip("e"), lead.group(1), at))
            continue
        if kind != "number" or _YEAR.fullmatch(value):
            continue
        m = re.match(r"\s+([A-Za-z][a-z]{2,})\b", text[pos:])
        if m and term_seq(m.group(1)):
            out.append((stem(m.group(1).lower()).rstrip("e"), value, at))
        elif unit := _UNIT_SYMBOL.match(text[pos:]):
            # "2,486 m": a unit symbol too short to tell apart (metres or minutes) still names
            # what is counted, when both texts write it after their number
            out.append((unit.group(1), value, at))
    return out


# A rate's head: its number and the noun it counts ("4 passengers per car").
_RATE_HEAD = re.compile(r"(\d[\d,.]*)\s+([A-Za-z][a-z]{2,})\s+(?:per|a|an|each)\b")
# A one- or two-letter unit symbol after a number ("m", "h", "km"), not an English word.
_UNIT_SYMBOL = re.compile(
    r"\s+(?!(?:a|i|am|an|as|at|be|by|do|go|he|if|in|is|it|me|my|no|of|on|or|so|to|up|us|we)\b)"
    r"([a-z]{1,2})(?![\w'])"
)


def counted_nouns(text: str) -> dict[str, tuple[str, str]]:
    """``{noun stem: (number, "number noun")}`` for the nouns a text counts with a bare number
    ("no more than 5 attempts" -> ``{"attempt": ("5", "5 attempts")}``); a noun counted twice with
    different numbers is left out."""
    out: dict[str, tuple[str, str]] = {}
    clash: set[str] = set()
    for noun, value, at in _counted(text):
        m = re.match(r"\s*[A-Za-z][a-z]*", text[at + len(value) :])
        span = value + (m.group(0) if m else "")
        if noun in out and out[noun][0] != value:
            clash.add(noun)
        out.setdefault(noun, (value, " ".join(span.split())))
    return {k: v for k, v in out.items() if k not in clash}


def _same_counted(sentence: str, answer: str) -> tuple[str, list[str], float] | None:
    """Another count of what the answer counted, stated as a fact: "it's 3 instalments" or "the
    letter says 3 instalments" after "the plan has 2 instalments". The user's own tally ("I've
    paid 2 instalments") is no such statement: the count needs a copula with an anaphoric
    subject, a relayed source or a sentence about the world before it."""
    targets = {noun: value for noun, value, _ in _counted(answer)}
    if not targets:
        return None
    framed_sentence = bool(REPORTED.search(sentence)) or statement_kind(sentence) == "assertion"
    for noun, value, at in _counted(sentence):
        if noun in targets and value != targets[noun]:
            if framed_sentence or _ANAPHORIC_COPULA.search(sentence[:at]):
                return value + " " + noun, [targets[noun]], 0.8
    return None


# A state that persists against what the answer said should follow ("I keep £800 and still get
# charged"), not a plan ("I'll still pay it then") or a wish ("I still want one").
_STILL = re.compile(r"\bstill\b(?!\s+(?:want|need|like|love|have a question|wonder|thinking))", _I)
_PLAN = re.compile(r"\b(?:will|'ll|going to|gonna|then)\b", _I)


def _despite(text: str, answer: str) -> tuple[str, list[str], float] | None:
    """An account, with a value of the answer's kind, of the outcome the answer ruled out still
    happening: "i keep £800 and still get charged the fee" after "keep at least £500 to avoid the
    £5 fee". The user's experience runs against the answer's condition, whatever its wording."""
    said = [(k, v) for k, v in find_values(answer) if k in CONTRADICTION_KINDS]
    if not said:
        return None
    answer_terms = set(term_seq(answer))
    for sent in sentences(text):
        if _PLAN.search(sent) or statement_kind(sent) in ("question", "request"):
            continue
        kinds = {k for k, _ in said}
        values = [v for k, v in find_values(sent) if k in kinds]
        if _STILL.search(sent):
            rest = set(term_seq(_STILL.split(sent, maxsplit=1)[1]))
            if values and rest & answer_terms:
                return values[0], [said[0][1]], 0.8
        elif _WORKED.search(sent) and _DONE_ACT.search(sent):
            # "I extended at 10 minutes before the end and it worked fine" after "until 5 minutes
            # before": the user did, with another value, what the answer's limit rules out
            other = [v for v in values if not any(same_value(v, a) for _, a in said)]
            if other and set(term_seq(sent)) & answer_terms:
                return other[0], [said[0][1]], 0.8
    return None


# An outcome that succeeded ("and it worked fine", "it went through", "no problem").
_WORKED = re.compile(
    r"\b(?:it|that|this|which)\s+(?:worked|went through|was (?:fine|accepted|approved|ok|okay)|got (?:accepted|approved))\b|"
    r"\bno (?:problem|issue)s?\b(?!\s+(?:at all\s+)?(?:with|if))",
    _I,
)
# ... of an act the user did (a past verb of theirs).
_DONE_ACT = re.compile(
    r"\b(?:i|we)\s+(?:just\s+|already\s+)?[a-z]+ed\b|\b(?:i|we)\s+(?:did|got|made|put|paid|sent)\b", _I
)
