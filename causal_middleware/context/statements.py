"""The shape of a user's sentence, read from how it opens: request, question, personal, assertion."""

from __future__ import annotations

import re

from causal_middleware.context.text import expand_informal, sentences

_I = re.IGNORECASE

STATEMENT = re.compile(
    r"\b(?:is|are|was|were|it's|that's|they're|costs?|takes?|took|lasts?|lasted|pays|paid|not|told|said|says|"
    r"heard)\b",
    _I,
)

# Leading words that carry no subject ("well, ...", "hmm, ...", "oh ...").
LEAD_IN = re.compile(
    r"^\s*(?:(?:well|hmm+|oh|ok|okay|so|but|and|wait|hey|yes|yeah|no(?!\s+one\b)|nope|um+|uh+|whoa|sorry)\b[,.!]*\s*)+",
    _I,
)
# A sentence that opens with a subject: a pronoun, a determiner or possessive, or a value.
_SUBJECT_OPENING = re.compile(
    r"^(?:it|it's|that|that's|this|they|they're|there|there's|these|those|the|a|an|your|its|their|his|her|"
    r"you|you're|everything|nothing)\b|^[$€£\d]",
    _I,
)
_FIRST_PERSON = re.compile(r"^(?:i|i'm|i've|i'd|my|me|we|we're|our|mine)\b", _I)
_REQUEST = re.compile(
    r"^(?:please|can|could|would|will|let's|let me)\b|^(?:i|we)(?:'d| would| want| need| wanna)\b|"
    # an imperative with the user as its object: "add me to section 4", "sign us up for May"
    r"^(?!(?:you|it|that|this|they|there|he|she|we|i|who|what|which|not|no)\b)[a-z]+\s+(?:me|us)\b(?!')",
    _I,
)


_INTERJECTION = re.compile(r"^[a-z]+,\s+(?=\w)", _I)


def statement_kind(sentence: str) -> str:
    """``"request"``, ``"question"``, ``"personal"`` (the user about themselves), ``"assertion"``
    (a statement about the world or the agent's answer) or ``"other"``: the shape of a sentence,
    read from its opening, with no word list about what it says."""
    text = expand_informal(sentence).strip()
    if text.endswith("?"):
        return "question"
    # One interjection set off by a comma ("weird, ...", "honestly, ...") carries no subject.
    body = _INTERJECTION.sub("", LEAD_IN.sub("", text))
    if not body:
        return "other"
    if _REQUEST.match(body):
        return "request"
    if _FIRST_PERSON.match(body):
        return "personal"
    if _SUBJECT_OPENING.match(body):
        return "assertion"
    return "other"


# A question opening with an auxiliary ("is it ...?", "didn't you ...?") or holding a question word
# asks; one in a statement's word order ("The sign says 9pm?", "Surely it's 60 minutes?") asserts.
_AUXILIARY_OPENING = re.compile(
    r"^(?:do|does|did|can|could|should|shall|must|will|would|may|might|is|are|am|was|were|have|has|had)"
    r"(?:n't)?\b",
    _I,
)
_QUESTION_WORD = re.compile(r"\b(?:what|when|where|which|who|whom|whose|why|how)\b", _I)
_CONJUNCTION_OPENING = re.compile(r"^(?:(?:and|but|so|or|then)\b\s*)+", _I)
# A sentence adverb before the subject ("surely", "apparently", "honestly").
_ADVERB_OPENING = re.compile(r"^[a-z]+ly\b,?\s+", _I)


def declarative_question(sentence: str) -> bool:
    """A sentence in a statement's word order that ends with a question mark: it puts a claim up
    for confirmation rather than asking for information ("Your page shows 30 days?", "Surely it's
    60 minutes?"). Read from how it opens: a subject first, no auxiliary, no question word."""
    text = expand_informal(sentence).strip()
    if not text.endswith("?"):
        return False
    body = _ADVERB_OPENING.sub("", _INTERJECTION.sub("", LEAD_IN.sub("", text)))
    if not body or _QUESTION_WORD.search(body):
        return False
    # every clause in a statement's order: "I paid $30 last time, is that still right?" ends by asking
    clauses = [_CONJUNCTION_OPENING.sub("", c.strip()) for c in re.split(r"[,;:]|\s[-\u2013\u2014]\s", body)]
    if any(_AUXILIARY_OPENING.match(c) for c in clauses if c):
        return False
    return bool(_SUBJECT_OPENING.match(body) or _FIRST_PERSON.match(body))


REPORTED = re.compile(
    r"\b(?:says?|said|saying|told|tells|states?|stated|stating|shows?|showed|shown|showing|reads|quotes?|"
    r"quoted|lists?|listed|mentions?|mentioned|heard|according to|confirms?|confirmed|wrote|writes|"
    r"advertised|advertises|displays|displayed|posted|read)\b",
    _I,
)


# A short label set off by a colon before the clause itself ("one more thing: ...", "quick q: ...").
LABEL = re.compile(r"^[^:?!.]{1,24}:\s+(?=\w)")
# A question word that asks for a quantity, a time, a place or a thing ("how much", "from what date",
# "at what temperature", "when", "which ..."), within the first words of the clause.
_INFORMATION_WORD = re.compile(
    r"^(?:\w+\s+){0,2}?(?:what|when|where|which|who|whom|whose|"
    r"how\s+(?:much|many|long|far|soon|often|old|big|early|late|quickly|high|low|cold|hot|hard|ahead)|"
    r"how\s+(?:do|does|can|could|should|would)\s+(?:i|we|my|our)\b|"
    # "can I give you ...?", "may we pay ...?": the user asks to do something
    r"(?:can|could|may)\s+(?:i|we)\b)\b",
    _I,
)
# A question addressed to the agent that asks it to do something ("can you ...", "could you ...").
_ASKS_AGENT = re.compile(r"^(?:can|could|would|will)\s+you\s+(?!even\b|actually\b|really\b)\w+", _I)
# A marker that makes a question rhetorical rather than a request for information.
_RHETORICAL_MARKER = re.compile(r"\b(?:even|actually|really|seriously|supposed)\b", _I)


# The question a sentence ends with, in a clause of its own after a comma, a semicolon or a dash
# ("Nobody has replied yet, so how would you know?", "You're not the lender, how can you say
# that?"): a question word or an auxiliary opens it, a conjunction before it dropped.
_TRAILING_QUESTION = re.compile(
    r"(?:[,;]|\s[-\u2013\u2014])\s*(?:(?:so|then|but|and|or)\s+)?"
    r"(?P<q>(?:how|why|who|what|where|when|which|do|does|did|can|could|should|would|will|is|are|was|were)"
    r"\b[^,;?]*\?+)\s*$",
    _I,
)


def trailing_question(sentence: str) -> str | None:
    """The question clause a longer sentence ends with, if any (see ``_TRAILING_QUESTION``)."""
    m = _TRAILING_QUESTION.search(sentence.strip())
    return m.group("q") if m else None


# A question asking which of two accounts holds ("which is it?", "who's right?"): it asks for no
# fact, it sets an account against the answer.
CHOICE_QUESTION = re.compile(
    r"\b(?:which|who)(?:'s|\s+is|\s+one\s+is|\s+one's)\s+(?:it|right|true|correct|wrong)\b", _I
)


def lead_stripped(sentence: str) -> str:
    """The sentence without its lead-in words, interjection and colon label."""
    text = expand_informal(sentence).strip()
    body = _INTERJECTION.sub("", LEAD_IN.sub("", text))
    return LABEL.sub("", body) or body


def asks_for_information(sentence: str) -> bool:
    """A question that asks for a fact ("how many guests do I need to register?", "from what hour
    can't you ...?") or asks the agent to do something ("can you promise ...?"), not one that
    judges the answer: read from how its clause opens. A marker of rhetoric ("even", "actually")
    makes it a challenge instead."""
    text = expand_informal(sentence).strip()
    if not text.endswith("?") or _RHETORICAL_MARKER.search(text):
        return False
    clauses = [lead_stripped(c) for c in re.split(r"(?<=[,;])\s+", text)]
    # the question is the clause that opens the sentence or the one that ends it
    return any(
        len(c.split()) >= 3
        and (_INFORMATION_WORD.match(c) or _ASKS_AGENT.match(c))
        and not CHOICE_QUESTION.match(c)
        for c in {clauses[0], clauses[-1]}
    )


def judging_text(text: str) -> str:
    """The turn without its questions that ask for a fact or ask the agent to act: a correction
    cue inside "how long do you need to get a key card?" or "can you promise you won't ...?" judges
    nothing."""
    sents = sentences(text)
    kept = [s for s in sents if not asks_for_information(s)]
    return text if len(kept) == len(sents) else " ".join(kept)


# The user's own past experience of a value: a first-person past or perfect ("I paid", "we were
# charged", "I've always been billed"), not a plan or a habit ("I usually arrive at 4").
EXPERIENCED = re.compile(
    r"\b(?:i|we)(?:'ve|\s+have|\s+had)?\s+(?:always\s+|just\s+|only\s+|never\s+|already\s+)?"
    r"(?:been\s+)?(?:paid|was\s+[a-z]+ed|were\s+[a-z]+ed|got\s+[a-z]+ed|charged|billed|quoted|given|sent)\b|"
    # ... or its second act, joined to a first ("I bought one in May and paid $40")
    r"\b(?:i|we)\s+[a-z]+ed\b(?:\s+[\w']+){0,5}?\s+(?:and|then)\s+(?:paid|got\s+[a-z]+ed|was\s+[a-z]+ed|"
    r"were\s+[a-z]+ed)\b|\b(?:i|we)\s+[a-z]+\b(?:\s+[\w']+){0,5}?\s+(?:and|then)\s+paid\b|"
    # ... or that of someone the user knows ("my mate was charged 400", "our neighbour paid 40")
    r"\b(?:my|our)\s+(?:[a-z]+\s+){0,2}?[a-z]+\s+(?:just\s+|only\s+|also\s+|once\s+|recently\s+)?"
    r"(?:paid|was\s+[a-z]+ed|were\s+[a-z]+ed|got\s+[a-z]+ed|charged|billed|quoted)\b|"
    # ... or told as what happened the last time ("Last time it dropped out I got the alert
    # after 6 hours")
    r"\blast time\b[^.;!?]*?\b(?:i|we)\s+(?:got|had|was|were|paid|waited|[a-z]+ed)\b|"
    # a price told by what was bought for it ("I got one for 96", "my colleague just bought one for 96")
    r"\b(?:i|we|(?:my|our)\s+[a-z]+)\s+(?:just\s+|only\s+|also\s+|once\s+|recently\s+)?(?:bought|got|paid)\b"
    r"[^.;!?]{0,30}?\bfor\s+(?=[$\u20ac\u00a3\d])",
    _I,
)
