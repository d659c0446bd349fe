"""What the agent says it did or will see done: the claims a later user turn can contradict.

An act in the first person ("I've waived the late charge", "I cancelled it", "I have booked ...") or a
commitment about what will happen ("your order will arrive at 3 pm", "I'll make sure ..."). A user
who then reports the opposite state ("it still shows", "... or not?") or judges it with no value
("that doesn't seem right") objects to what the agent did, not to a fact in its sources.
"""

from __future__ import annotations

import re

from causal_middleware.context.statements import lead_stripped
from causal_middleware.context.text import find_values, sentences, share_stem, term_seq

_I = re.IGNORECASE

# "I've removed ...", "I have just cancelled ...", "I sent ...", "we've booked ...".
_DONE = re.compile(
    r"\b(?:i|we)(?:'ve|\s+have|\s+just|\s+already)?\s+(?:just\s+|already\s+|now\s+|gone ahead and\s+)?"
    # the agent looking something up is not an act on the user's behalf ("I've checked our pages")
    r"(?!(?:checked|looked|searched|found|read|confirmed|verified|noticed|seen|reviewed|asked|tried|"
    r"failed|wanted|needed|received|noted|understood|learned|learnt)\b)"
    r"(?P<verb>[a-z]+ed|sent|made|put|set|gave|told|took|let|paid|wrote|done|cut|shut)\b(?P<rest>[^.;!?]*)",
    _I,
)
# "... will be ready at 9 am", "I'll make sure ...", "it will arrive by Friday".
_COMMITMENT = re.compile(
    r"\b(?:will|i'll|we'll|it'll|you'll|is going to|are going to)\s+(?P<rest>[^.;!?]+)", _I
)
_HEDGED = re.compile(r"\b(?:may|might|could|usually|typically|estimate[sd]?|around|about|roughly)\b", _I)


def agent_act(answer: str) -> str | None:
    """The sentence in which the agent reports an act of its own or commits to an outcome with a
    definite value, if any: ``"I've waived the late charge on your account."``."""
    for sent in sentences(answer):
        if sent.rstrip().endswith("?"):
            continue
        if _DONE.search(sent) or _DONE_ELLIPTICAL.match(sent.strip()):
            return sent.strip()
        m = _COMMITMENT.search(sent)
        if (
            m
            and (
                find_values(m.group("rest"))
                or _ASSURED.search(m.group("rest"))
                or (_REASSURED.search(sent[: m.start()]) and not _DUTY.match(m.group("rest")))
            )
            and not _HEDGED.search(sent)
        ):
            return sent.strip()
    return None


# An outcome promised with certainty, value or not ("it will definitely be approved").
_ASSURED = re.compile(
    r"\b(?:definitely|certainly|surely|for sure|guaranteed|100%|without (?:a )?doubt)\b", _I
)
# A commitment the agent opens with a yes to the user's question or a reassurance ("Yes, you'll get
# the score you need", "Don't worry, I'll get that cancelled"): given as certain, like "definitely".
# General language of assent and reassurance only.
_REASSURED = re.compile(
    r"^\W*(?:yes|yep|yeah|absolutely|of course|sure thing|don't worry|do not worry|no worries|"
    r"rest assured|not to worry)\b",
    _I,
)
# What the user will have to do is no outcome promised ("Yes, you'll need your passport").
_DUTY = re.compile(r"(?:need|have to|has to|must|be (?:required|asked|expected))\b", _I)
# The act reported without its subject, a participle and then what it was done for ("Booked,
# Wednesday 16:00.", "Cancelled: order 4411."): the agent's own act, elided as in a chat reply.
_DONE_ELLIPTICAL = re.compile(
    r"^(?:all\s+)?(?:[a-z]+ed|done|sent|made|set)\s*[,:\u2014-]\s*(?=[^.;!?]*\d)", _I
)
# The agent's words quoted back ("where you said it'd be ...", "you told me it would ...").
_QUOTED_BACK = re.compile(r"\byou\s+(?:said|told me|promised|claimed|assured me)\b(?P<rest>[^.;!?]*)", _I)


# Verbs of promising: what they report back is a commitment, the agent's act by its kind.
_PROMISED = re.compile(r"(?:promised|assured me)\b", _I)


# A state the user reports as persisting ("it still shows the charge", "still no reply").
_STILL = re.compile(r"\bstill\b(?!\s+(?:want|need|like|have a question|wonder))", _I)
# A fact set against the act with a concessive marker ("room C is closed on Fridays though").
_CONCESSIVE = re.compile(r"\b(?:though|tho|however)\s*[.!]*\s*$|^(?:but|except)\b", _I)
# How a question that asks something opens: an auxiliary, a modal or a question word. A question
# that opens otherwise echoes what was said back, in disbelief.
_QUESTION_OPENING = re.compile(
    r"^(?:do|does|did|can|could|should|shall|will|would|is|are|am|was|were|have|has|had|may|might|must|"
    r"how|what|when|where|which|who|whom|whose|why|whether|if|any|anything|and|also|so|or|ok|okay)\b|"
    r"^(?:don't|doesn't|didn't|can't|won't|isn't|aren't|wasn't|weren't|haven't|hasn't|shouldn't|wouldn't)\b",
    _I,
)
# An auxiliary, a modal or a copula: the question has a verb of its own and asks, it does not echo.
_FINITE = re.compile(
    r"\b(?:is|are|was|were|will|would|can|could|do|does|did|has|have|had|shall|should|may|might|must)\b|"
    r"'(?:s|re|ll|ve|d)\b",
    _I,
)
_LEAD = re.compile(
    r"^(?:(?:wait|hold on|hang on|um+|uh+|er+|hmm+|oh|whoa|what|sorry|really)\b[,.!?]*\s*)+", _I
)
# A polar question put to the agent that demands a yes or a no ("so did you waive it or not?").
_OR_NOT = re.compile(r"\bor not\b\s*\?*\s*$", _I)


def disputes_act(reply: str, answer: str) -> bool:
    """The user disputes what the agent said it did or would see done: a persisting state about
    what the act concerned ("my account still shows the charge" after "I've waived the late charge"), or a
    yes-or-no challenge about it ("so did you waive it or not?")."""
    act = agent_act(answer)
    if act is None:
        return False
    act_terms = set(term_seq(act))
    reply_terms = set(term_seq(reply))
    for sent in sentences(reply):
        quoted = _QUOTED_BACK.search(sent)
        if quoted and share_stem(set(term_seq(quoted.group("rest"))), act_terms):
            return True  # the promise held up against the user ("... this chat where you said it'd be approved?")
        if quoted and _PROMISED.match(quoted.group(0).split(None, 1)[1]) and not sent.rstrip().endswith("?"):
            # "You promised us that room and we got another one": a verb of promising names the
            # act itself, whatever words it is told back in
            return True
        body = lead_stripped(_LEAD.sub("", sent.strip()))
        echo = body.endswith("?") and not _QUESTION_OPENING.match(body) and not _FINITE.search(body)
        if echo and share_stem(set(term_seq(body)), act_terms):
            return True  # an echo of the act as a question ("my whole card number in an email?")
        if _OR_NOT.search(sent) and (share_stem(reply_terms, act_terms) or re.search(r"\byou\b", sent, _I)):
            return True
        if (
            (_STILL.search(sent) or _CONCESSIVE.search(sent))
            and not sent.rstrip().endswith("?")
            and share_stem(set(term_seq(sent)), act_terms)
        ):
            return True
    return False


def act_rule(act: str) -> str:
    """A rule for the system prompt from the act the user objected to."""
    return f'Do not claim an outcome you cannot confirm or an action you are not allowed to take (as in: "{act}").'
