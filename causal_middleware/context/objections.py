"""Objections read from a sentence's structure: what a user says against what the agent did.

No correction words are needed: an obligation binding someone other than the user, the agent's
advice quoted back, a reproach, an exposure the agent caused, a skipped step, a denied request, a
misgiving, or another source's account set against the answer's.
"""

from __future__ import annotations

import re

from causal_middleware.context.statements import (
    CHOICE_QUESTION,
    LABEL,
    asks_for_information,
    lead_stripped,
    trailing_question,
)
from causal_middleware.context.text import (
    MEASURED_KINDS,
    find_values,
    frequencies,
    same_value,
    sentences,
    share_stem,
    term_seq,
)

_I = re.IGNORECASE

_REQUEST_OPENING = re.compile(
    r"^(?:please|can|could|would|will|let's|let me)\b(?!\s+you\s+even\b)|^(?:i|we)(?:'d| would| want| need| wanna)\b",
    _I,
)
# An obligation or a permission ("needs to", "had to", "allowed to", "supposed to", "must").
_DEONTIC = re.compile(
    r"\b(?:needs? to|has to|have to|had to|must|ought to|(?:supposed|allowed|permitted|required|meant) to)\b",
    _I,
)
_FIRST_PERSON_WORD = re.compile(r"\b(?:i|we|me|us)\b", _I)
# A question that opens with an auxiliary or a question word asks for information...
_ASKING = re.compile(
    r"^(?:do|does|did|can|could|should|shall|must|will|would|is|are|am|was|were|have|has|how|what|when|"
    r"where|which|who|why)\b(?P<subject>\s+\w+)?",
    _I,
)
_QUESTION_WORD = re.compile(r"\b(?:how|what|when|where|which|who|whom|whose|why|whether)\b", _I)
# ...unless it questions the agent itself ("are you even allowed to ...?").
_AGENT_SUBJECT = re.compile(r"^\s+you\b", _I)
# The agent's own advice quoted back to it ("You told me to ...", "You said ...").
_AGENT_ADVICE = re.compile(
    r"^you\s+(?:just\s+|already\s+|literally\s+)?(?:told|said|advised|suggested|asked)\b", _I
)
# Something the user expected has not happened ("nobody has looked at it yet").
# Where a clause may open: the sentence start, after punctuation, or after a conjunction.
_CLAUSE_START = r"(?:^|[,;:?!]\s*|\b(?:but|and|so)\s+)"
_UNMET = re.compile(
    _CLAUSE_START
    + r"(?:nobody|no one|no-one|none|nothing|not even)\b[^?]*\byet\b|"
    # ... or that nobody did what should have been done ("no one warned us", "nobody said so").
    + _CLAUSE_START
    + r"(?:nobody|no one|no-one)\s+(?:ever\s+|even\s+|actually\s+)?"
    r"(?:[a-z]+ed|told|said|gave|sent|showed|let|made|rang|wrote|read|saw|took|came|got|did)\b"
    r"(?!\s+(?:worry|mind)\b)",
    _I,
)
# The user was left uninformed ("I was never told", "we weren't warned").
_UNINFORMED = re.compile(
    r"\b(?:i|we)\s+(?:wasn't|was not|weren't|were not|was never|were never|haven't been|have not been|"
    r"hadn't been|had not been)\s+(?:told|warned|informed|notified|asked)\b",
    _I,
)
# The user denies having asked for or agreed to what was done ("I never agreed to that").
_DENIED_CONSENT = re.compile(
    r"\b(?:i|we)\s+(?:never|didn't|did not|haven't|have not)\s+(?:even\s+)?(?:say|said|ask|asked|agree|agreed|"
    r"approve|approved|authori[sz]e|authori[sz]ed|consent|consented|request|requested)\b",
    _I,
)
# A step the agent skipped, named with "without" ("... without even checking?").
_SKIPPED_STEP = re.compile(
    r"\bwithout\s+(?:even\s+|first\s+|ever\s+|at least\s+)?(?:ask|check|tell|confirm|verif|warn|mention|"
    r"consult|notify|inform)\w*",
    _I,
)
# A question about who authorised what the agent did ("who said you could ...?", "who told you to
# ...?", "who allowed that?"): it asks nobody's name, it denies the permission.
_AUTHORITY_QUESTION = re.compile(
    r"^who\s+(?:said|told|asked|allowed|authori[sz]ed|let|gave|permitted)\s+(?:you|that|this|it)\b", _I
)
# A fault named by the verb's own prefix, done by the agent to the user or their things ("you've
# double-booked me", "you overcharged us", "you misspelled my name").
_FAULT_VERB = re.compile(
    r"\byou(?:'ve|\s+have)?\s+(?:just\s+|already\s+)?(?:mis|double[- ]?|over|under|wrongly\s+)"
    r"[a-z]+(?:ed|en|t)\b",
    _I,
)
# A polar question made rhetorical by "even" after its subject ("is that even legal?", "can you even
# do that?"), and "why would ..." about someone other than the user.
_RHETORICAL_EVEN = re.compile(
    r"^(?:is|are|was|were|can|could|does|do|did|should|would)\s+(?:that|this|it|you|they)\s+(?:even|really|actually)\b|"
    r"^why\s+would\s+(?!i\b|we\b|my\b|our\b)[a-z]+|"
    # "how would you know": the agent's grounds doubted (would/could: "how can you tell if ..." asks)
    r"^how\s+(?:would|could)\s+(?:you|a\s+[a-z]+|an\s+[a-z]+|anyone|anybody|they|it)\s+(?:even\s+|possibly\s+|really\s+)?"
    r"(?:know|tell|be sure)\b|"
    # an act going on doubted, whoever does it ("should a chat bot really be telling me ...?",
    # "should I really be typing my card number in here?"): the progressive points at what is
    # happening now, "really" / "even" doubts it
    r"^(?:should|must|would|could|can)\s+(?:[a-z]+\s+){1,3}?(?:even|really|actually|honestly)\s+be\s+[a-z]+ing\b|"
    # "who actually cancels it?": who does what the agent said would be done, doubted
    r"^(?:so\s+|then\s+|but\s+)?who\s+(?:even|really|actually)\s+[a-z]+",
    _I,
)
# An expected safeguard found missing: "no X at all?", "no X or anything?", "without a X?".
_MISSING_SAFEGUARD = re.compile(
    r"\b(?:no|not a|not any|not one)\s+(?!worries\b|problem\b|rush\b|need\b|thanks\b)[a-z]+(?:\s+[a-z]+)?\s+"
    r"(?:at all|or anything|whatsoever)\b|"
    r"\bwithout\s+(?:a|an|any|the|my)\s+(?:[a-z]+\s+)?(?:check|approval|confirmation|verification|consent|review|"
    r"signature|warning|notice|permission)\b",
    _I,
)
# The user judges what was just said or done ("that seems off", "this sounds risky").
_MISGIVING = re.compile(
    r"\b(?:that|this|it)\s+(?:seems|sounds|looks|feels)\s+(?:a bit\s+|kind of\s+|kinda\s+|really\s+|very\s+|pretty\s+)?"
    r"(?:off|odd|weird|strange|fishy|sketchy|dodgy|risky|dangerous|unsafe|wrong|suspicious)\b|"
    r"\bi(?:'m| am)\s+not\s+(?:comfortable|happy|okay|ok)\s+(?:with|taking|about|that)\b|"
    # "I only asked ...": the agent went beyond the request
    r"\bi\s+(?:only|just)\s+asked\b|\bi\s+only\s+(?:wanted|meant)\b|\bi\s+was\s+only\s+asking\b",
    _I,
)
# What the agent did belongs to someone else, or should not have been done: "that seems like
# something a pharmacist should check", "that's not your call", "I'd rather you hadn't done that",
# "I don't think you're qualified to say that", and a judgement that it is not for a chat ("that's
# confidential", "that's a bit personal").
_OTHERS_CALL = re.compile(
    r"\b(?:like|that's|that is|this is|isn't that|is that not)\s+(?:something|a job|a call|a decision)\s+(?:for\s+)?"
    r"(?:only\s+)?(?:a|an|the|your|my|our)?\s*[a-z]+\s+(?:should|would|can|could|needs? to|has to|must|ought to)\b|"
    # the agent's standing denied: "you're not a lawyer though", "you're a bot", "who are you to ...",
    # "there's no way you can know that", "this should go to a human"
    r"\byou(?:'re|\s+are)\s+not\s+(?:a|an)\s+(?!problem\b|bother\b)[a-z]+|"
    r"\byou(?:'re|\s+are)\s+(?:a|an|just a|only a)\s+(?:bot|chatbot|machine|computer|program|robot|ai)\b|"
    r"^who\s+are\s+you\s+to\b|\bno\s+way\s+(?:you|that|this|it)\b|"
    r"\b(?:should|needs? to|has to|ought to)\s+(?:go|be passed|be sent|be escalated|be referred|be handed)\s+to\s+"
    r"(?:someone|somebody|a\s+(?:real\s+)?(?:human|person|professional|specialist|manager|supervisor))\b|"
    r"\bthat's\s+(?:a\s+)?(?:bold|big|strong|risky|dangerous)\s+(?:thing|claim|promise|statement)\b|"
    r"\bnot\s+(?:your|the bot's|a bot's|a chatbot's)\s+(?:call|decision|place|job)\b|\bnot\s+up\s+to\s+you\b|"
    r"\b(?:i'd|i would)\s+rather\s+you\s+(?:hadn't|had not|didn't|did not|wouldn't|would not)\b|"
    r"\bi\s+wish\s+you\s+(?:hadn't|had not|had asked|had checked|had told)\b|"
    r"\bi\s+(?:don't|do not)\s+think\s+(?:that\s+)?you(?:'re|\s+are|\s+can|\s+could|\s+should)\b|"
    r"^(?:that|this)(?:'s|\s+is|\s+was)\s+(?:a\s+bit\s+|kind of\s+|kinda\s+|very\s+|pretty\s+|really\s+)?"
    r"(?:confidential|private|personal|sensitive|inappropriate|illegal|unsafe|dangerous|risky|not safe|not allowed)\b",
    _I,
)
# What the user needed set against what they were given ("I needed help right then, not a
# form!", "we wanted a refund, not a voucher"): the agent's response was not what the turn called for.
_NEEDED_INSTEAD = re.compile(
    r"^(?:i|we)\s+(?:really\s+|just\s+|only\s+)?(?:needed|wanted|was asking for|were asking for|asked for|"
    r"expected)\b[^.;!?]{1,60},\s*not\s+(?:a|an|the|some|your|just)?\s*[a-z]",
    _I,
)
# A negative question with an obligation whose subject is not the user ("Shouldn't someone look at
# it first?", "Doesn't that need a signature?"): the asker expects the obligation to hold.
_NEGATIVE_DEONTIC_QUESTION = re.compile(
    r"^(?:shouldn't|should not|mustn't|must not|oughtn't)\s+(?!i\b|we\b)\w+|"
    r"^(?:don't|doesn't|didn't|do not|does not)\s+(?:you|someone|anyone|somebody|they|it|that|this)\s+"
    r"(?:need|have to|require)\b",
    _I,
)
# A reproach for what the agent left undone: a counterfactual modal perfect addressed to it
# ("you could have said so", "you should've checked").
_REPROACH = re.compile(
    r"\byou\s+(?:could|should)(?:'ve|\s+(?:at least\s+|really\s+|just\s+|also\s+)?have)\s+(?:at least\s+|just\s+|also\s+)?"
    r"(?!one\b|none\b)[a-z]+(?:ed|en|wn|ne|t|d)\b",
    _I,
)
# A manner phrase pointing back at what was just done ("... like that?", "just like this").
_BACK_REFERENCE = re.compile(r"\blike (?:that|this)\b|\bthat way\b|\bjust like that\b", _I)
# An exposure the agent's act caused: others may now do something to it ("anybody nearby can
# read that now", "now everyone can see it").
_INDEFINITE_PERSON = r"(?:anyone|anybody|someone|somebody|everyone|everybody|people)"
_EXPOSURE = re.compile(
    rf"(?:^|\bnow\s+){_INDEFINITE_PERSON}\b[^?]*?\b(?:can|could|will|might)\s+(?:now\s+)?[a-z]+\s+(?:that|this|it|them)\b",
    _I,
)
# ... or asked as a question: others may "just" do it ("so anybody can just walk in?").
_OPEN_ACCESS = re.compile(
    rf"(?:^|\bso\s+|\bnow\s+){_INDEFINITE_PERSON}\b[^.!]*?\b(?:can|could)\s+just\s+[a-z]+", _I
)
_NOW = re.compile(r"\bnow\b", _I)


# A question asking which of two accounts holds ("which is it?", "who's right?").
_CHOICE_QUESTION = CHOICE_QUESTION

# What someone other than the user or the agent said ("my neighbour said ...", "the sign says ...").
_RELAYED = re.compile(
    r"(?P<before>(?:\S+\s+){0,2})(?:said|says|say|told me|tells me|claims?|claimed|mentioned)\b",
    _I,
)
_FIRST_OR_SECOND = re.compile(r"\b(?:i|we|you)\b", _I)


def relayed_conflict(text: str) -> bool:
    """The user sets another source's account against the agent's and asks which holds ("the
    leaflet said it closes early, so which is it?"): a conflict with the answer, with no value."""
    if not _CHOICE_QUESTION.search(text):
        return False
    return any(not _FIRST_OR_SECOND.search(m.group("before")) for m in _RELAYED.finditer(text))


# Words that open a reply without carrying its subject ("um, ...", "hold on, ...", "wait what, ...").
_LEAD_IN = re.compile(
    r"^\s*(?:(?:(?:well|hmm+|um+|uh+|er+m?|oh|ok|okay|wait|hey|hold on|hang on|hold up|whoa|wow|lol|ha(?:ha)+|"
    r"ugh+|omg|jeez|geez|yikes|oof)\b[,.!?]*|"
    # words that may also open the clause itself lead in only when punctuated: "no, ..." / "no one"
    r"(?:so|but|and|also|plus|really|what|yeah|yes|no|sorry)[,.!?]+)\s*)+(?=\w)",
    _I,
)


_NEGATIVE = re.compile(r"\b(?:no|not|never|none|nothing|nobody|cannot|without)\b|n't\b", _I)


def relayed_contradiction(text: str, answer: str) -> bool:
    """The user relays another source's account of what the answer was about, with the opposite
    polarity ("the pharmacist said never mix the two" against "yes, they mix fine"): a conflict
    with the answer that carries no value. A relayed account asked about ("... is that so?") is not."""
    answer_terms = set(term_seq(answer))
    answer_negated = bool(_NEGATIVE.search(answer))
    sents = sentences(text)
    if sents and asks_for_information(sents[-1]):
        # "my prof says she'll sign me in. Until when will you take the form?": the account sets
        # the scene for a new question
        return False
    for sent in sents:
        if sent.rstrip().endswith("?"):
            continue
        for m in _RELAYED.finditer(sent):
            if _FIRST_OR_SECOND.search(m.group("before")):
                continue
            account = sent[m.end() :]
            if (
                share_stem(set(term_seq(account)), answer_terms)
                and bool(_NEGATIVE.search(account)) != answer_negated
            ):
                return True
    return False


def relayed_value(text: str, answer: str) -> bool:
    """The user relays another source's account that gives another value of a kind the answer
    stated ("the manager said you can do 3 times a day" against "up to twice a day"): a value
    correction told through someone else, with no correction words. An account asked about is not."""
    said = _measured(answer)
    if not said:
        return False
    for sent in sentences(text):
        if sent.rstrip().endswith("?"):
            continue
        for m in _REPORTED.finditer(sent):
            if _FIRST_OR_SECOND.search(m.group("before")):
                continue
            for kind, value in _measured(sent[m.end() :]):
                same_kind = [v for k, v in said if k == kind]
                if same_kind and not any(same_value(value, v) for v in same_kind):
                    return True
    return False


# Someone's report in the past or the third person, its speaker named before it ("the manager at
# the front desk said", "my neighbour tells me"); not a request ("please claim ...").
_REPORTED = re.compile(
    r"(?P<before>\b(?:\S+\s+){1,4}?)(?:said|says|told (?:me|us)|tells (?:me|us)|mentioned)\b", _I
)


def _measured(text: str) -> list[tuple[str, str]]:
    """The measured values of a text, a frequency in words ("twice a day") among them."""
    found = [(k, v) for k, v in find_values(text) if k in MEASURED_KINDS]
    return found + [("frequency", f) for f in frequencies(text) if ("frequency", f) not in found]


def behavioural_objection(sentence: str, said: str | None = None) -> bool:
    """A reply to the agent's answer that objects to what it did, read from the sentence's
    structure rather than correction words: an obligation or permission that binds someone other
    than the user ("Surely someone has to check it first?", "I thought this had to be signed",
    "Are you even allowed to ...?", or a permission asked about what was just done "... like
    that?"), the agent's advice quoted back ("You told me to ..."), a reproach for what it left
    undone ("you could have said"), an exposure its act caused ("anybody can read that now"), or
    an expected step that has not happened ("nobody has even looked at it yet"). A question asking
    what the user must do ("Do I need to ...?") and a request are not objections. ``said``, when
    given, is what the agent said before in the session: advice quoted back must be some of it
    ("you said you'd refund me, when will I see it" after answers that never spoke of a refund
    recalls another conversation to ask a question, it quotes nothing back)."""
    text = _LEAD_IN.sub("", sentence.strip())
    text = LABEL.sub("", text) or text
    advice = _AGENT_ADVICE.match(text)
    if advice and said is not None:
        clause = re.split(r"[,;:]", text[advice.end() :], maxsplit=1)[0]
        quoted = set(term_seq(clause))
        if (
            quoted
            and not share_stem(quoted, set(term_seq(said)))
            # (a value of what was said quoted back is some of it: "you told me I'd get £23")
            and not any(same_value(v, a) for _, v in find_values(clause) for _, a in find_values(said))
        ):
            advice = None
    if advice or _UNMET.search(text) or _REPROACH.search(text):
        return True
    if _AUTHORITY_QUESTION.match(text) or _FAULT_VERB.search(text):
        return True
    if _NEGATIVE_DEONTIC_QUESTION.match(text) or _OPEN_ACCESS.search(text) or _RHETORICAL_EVEN.match(text):
        return True
    # the same rhetorical question after the account that grounds it ("Nobody has replied yet, so
    # how would you know?")
    ending = trailing_question(text)
    if (
        ending
        and ending != text
        and (_RHETORICAL_EVEN.match(ending) or _NEGATIVE_DEONTIC_QUESTION.match(ending))
    ):
        return True
    if _OTHERS_CALL.search(text) or _NEEDED_INSTEAD.match(text):
        return True
    # "I wasn't told the time when I booked, what is it?" asks in a later clause.
    wh_question = text.endswith("?") and _QUESTION_WORD.search(text) is not None
    if not wh_question and (
        _UNINFORMED.search(text) or _MISSING_SAFEGUARD.search(text) or _MISGIVING.search(text)
    ):
        return True
    if not text.endswith("?") and _EXPOSURE.search(text) and _NOW.search(text):
        return True
    asking = _ASKING.match(text)
    # "How much can I spend without asking first?" asks for information; "Did you ... without
    # asking?" questions the agent.
    info_question = asking is not None and not (
        asking.group("subject") and _AGENT_SUBJECT.match(asking.group("subject"))
    )
    if _SKIPPED_STEP.search(text) and not info_question:
        return True
    if _DENIED_CONSENT.search(text) and not wh_question:
        return True
    if _REQUEST_OPENING.match(text):
        return False
    m = _DEONTIC.search(text)
    if m is None:
        return False
    before = text[: m.start()].split()[-2:]
    if any(_FIRST_PERSON_WORD.fullmatch(w.strip(",")) for w in before):
        return False
    if asking is not None:
        # "Is anyone allowed to do that like that?" asks whether what was just done was allowed.
        if _BACK_REFERENCE.search(text):
            return True
        return bool(asking.group("subject") and _AGENT_SUBJECT.match(asking.group("subject")))
    # "We were burgled, how quickly must it be reported?" asks in a later clause.
    return not (text.endswith("?") and _QUESTION_WORD.search(text))


# "so why did you?", "then why would you?": the challenge of what the agent did, its verb left out.
_ELLIPTICAL_WHY = re.compile(
    r"\bwhy\s+(?:did|would|do|are|were)\s+you\s*\?+\s*$|"
    # the user asks why the agent said what it said ("so why did you tell me it was booked?")
    r"\bwhy\s+(?:did|would)\s+you\s+(?:tell|say|promise|confirm|claim)\b[^?]*\?",
    _I,
)
# A question in statement order about the agent, with a marker of disbelief: "you can just tell me
# that?", "you're really giving me a form?" (an ordinary confirmation, "you're open on Sunday?",
# has no such marker).
_INCREDULOUS = re.compile(
    # "you just need my email for that?" confirms a requirement, it does not disbelieve
    r"^you(?:'re|'ve|'ll| are| can| could| will| would| just)?\b(?![^?]*\b(?:need|want|require)s?\b)"
    r"[^?]*\b(?:just|even|really|seriously)\b[^?]*\?",
    _I,
)
# The user pointing back at their own words ("I said ...", "like I told you, ...", "as I mentioned").
OWN_WORDS = re.compile(
    r"\b(?:i\s+(?:already\s+)?(?:said|told you|mentioned|explained|wrote)|as i said|like i said)\b(?P<rest>[^.;!?]*)",
    _I,
)


# The agent's instruction echoed back in disbelief, in any clause ("someone's hurt and you're
# telling me to fill in a form?"): the user restates what the agent told them to do as a question.
_TELLING_ME = re.compile(
    r"\byou(?:'re|\s+are)\s+(?:just\s+|really\s+|seriously\s+|now\s+)?(?:telling|asking)\s+me\s+to\b[^?]*\?",
    _I,
)
# A polar question about whether what just happened was proper, pointing back at it ("is it safe
# for you to take my details like this?", "should I have sent that here at all?"): the user doubts
# the exchange the agent let happen. A question about a future step has no back reference.
_PROPRIETY = re.compile(
    r"^(?:is|was|isn't|wasn't)\s+(?:it|that|this)\s+(?:really\s+|even\s+|actually\s+)?"
    r"(?:safe|ok|okay|secure|wise|allowed|legal|normal|fine|right|a good idea)\b|"
    r"^should\s+(?:i|we)\s+(?:have|'ve|even\s+have)\s+[a-z]+(?:ed|en|wn|t|n|d)\b|"
    r"^(?:are|were)\s+you\s+(?:really\s+|even\s+)?(?:supposed|meant|allowed|permitted)\s+to\b",
    _I,
)
_LOOKING_BACK = re.compile(
    r"\blike (?:that|this)\b|\bat all\b|\bthat way\b|\bin (?:the|this|a) (?:chat|conversation)\b|"
    r"\b(?:over|on|via|by) (?:chat|here)\b|\bhere\s*\?",
    _I,
)


_ASIDE = re.compile(r"^(?:actually|honestly|seriously|hang on|hold on|wait|um+|hmm+)\b[,.!]*\s*", _I)


def challenges_agent(sentence: str) -> bool:
    """A challenge of what the agent did, with no value and no correction words: an elliptical
    "so why did you?", a statement-order question about the agent with a marker of disbelief
    ("you can just tell me that?"), the agent's instruction echoed back ("... and you're telling me
    to wait?") or a question whether what just happened was proper, pointing back at it ("is it
    safe to do this like this?")."""
    text = _LEAD_IN.sub("", sentence.strip())
    bare = lead_stripped(text)
    if _TELLING_ME.search(text):
        return True
    opened = _ASIDE.sub("", bare or text)
    if text.endswith("?") and _PROPRIETY.match(opened) and _LOOKING_BACK.search(text):
        return True
    return bool(_ELLIPTICAL_WHY.search(text) or _INCREDULOUS.match(text) or _INCREDULOUS.match(bare))


# The user's own prior belief, set against what they were just told ("I thought only X has Y?", "I
# was under the impression we had to ..."): a belief in the past tense is a counter-expectation.
# "I thought so" agrees; "I thought about it", "I thought I'd ask" and "I thought you might know"
# state no belief about the matter.
_PRIOR_BELIEF = re.compile(
    r"^i\s+(?:always\s+|honestly\s+|really\s+)?(?:thought|believed|assumed|was under the impression|"
    r"was always told|understood)\s+(?:that\s+)?"
    r"(?!so\b|about\b|of\b|i'd\b|i\s+(?:would|might|could|should|will|may)\b|"
    r"(?:you|it|maybe|perhaps)\s+(?:might|could|may|would)\s+(?:help|know|be able)\b)(?P<belief>.+)$",
    _I,
)
# ... and the belief is a clause: a verb of its own, finite or modal ("only X has Y", "we were
# supposed to ...", "it had to be signed").
_BELIEF_VERB = re.compile(
    r"\b(?:is|are|was|were|has|have|had|do|does|did|can|could|will|would|should|must|needs?|needed|"
    r"got|gets|goes|went|came|comes|covers?|covered|includes?|included|applies|applied)\b|"
    r"'(?:s|re|d|ll|ve)\b|\b[a-z]+(?:ed|es)\b",
    _I,
)


def prior_belief(sentence: str) -> bool:
    """The user sets a belief they held before against the answer ("Hold on, I thought only members
    could park there?", "I was under the impression we had to book first"): the
    past-tense belief says what they were told is not what they expected, a correction with no
    value and no correction word."""
    text = _ASIDE.sub("", _LEAD_IN.sub("", sentence.strip())).strip()
    m = _PRIOR_BELIEF.match(text)
    if m is None:
        return False
    belief = m.group("belief").strip(" ?.!")
    if _AGREEMENT.fullmatch(belief):
        return False  # "I thought that was the case": the answer confirmed it
    return len(belief.split()) >= 3 and _BELIEF_VERB.search(belief) is not None


_AGREEMENT = re.compile(
    r"(?:(?:that|it|this)\s*)?(?:was|is|'s|would be|might be)\s+(?:the case|right|true|correct|so)|as much",
    _I,
)


# Doubt put to the agent ("are you sure?", "really?") ...
_DOUBT = re.compile(
    r"^(?:are you (?:sure|certain)|is that (?:right|true|correct|so)|really|seriously)\s*\?+$", _I
)


def doubted_with_source(text: str) -> bool:
    """Doubt put to the agent and, in another sentence of the turn, what a source other than the
    user or the agent states ("Are you sure? The policy page says it gets reviewed first."): the
    user sets the source against the answer, whatever it says."""
    sents = [_LEAD_IN.sub("", s.strip()) for s in sentences(text)]
    if not any(_DOUBT.match(s) for s in sents):
        return False
    for sent in sents:
        if sent.endswith("?"):
            continue
        if any(not _FIRST_OR_SECOND.search(m.group("before")) for m in _RELAYED.finditer(sent)):
            return True
    return False
