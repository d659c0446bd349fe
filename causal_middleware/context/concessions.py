"""The agent's own concession as evidence that the user turn before it was a correction.

A user may correct the agent in words no phrase family reads ("They moved it to the second
Saturday.", "The office told me it's Tuesdays."); the agent's next turn opening with a concession
("You're right, sorry about that.", "Thanks for putting me right", "I stand corrected") says the
user turn was taken as one. Only an opening concession counts: "you're right to ask" or a later
"sorry for the wait" is politeness, not an admission.
"""

from __future__ import annotations

import re

from causal_middleware.context.conversation import Conversation, NodeType
from causal_middleware.context.signals import Signal, SignalType
from causal_middleware.context.text import quote

_I = re.IGNORECASE

_CONCESSION = re.compile(
    # an apology may name what it is for first ("Sorry about that, you're right", "apologies for
    # the confusion - you're correct")
    r"^\W*(?:(?:oh|ah|apologies|sorry|my apologies|my mistake|my bad|oops)"
    r"(?:\s+(?:about|for)\s+(?:that|this|the\s+[a-z]+(?:[\s-][a-z]+)?))?\b[,.!:;\s-]*)*"
    r"(?:"
    r"(?:you(?:'re| are)|that(?:'s| is))\s+(?:quite\s+|absolutely\s+|completely\s+|entirely\s+)?"
    r"(?:right|correct)\b(?!\s+(?:to|that you|in asking)\b)|"
    r"thanks?(?: you)?\s+for\s+(?:putting me (?:right|straight)|correcting me|the correction|"
    r"setting me straight|pointing (?:that|this) out|catching (?:that|this))\b|"
    r"(?:i|we)\s+stand\s+corrected\b|"
    r"(?:good|nice)\s+catch\b|"
    r"(?:i|we)\s+(?:was|were|got (?:that|it))\s+wrong\b|"
    # the agent owns the error with its own verb: "I had that wrong", "I've got it wrong", "I was
    # mistaken", "I made a mistake"
    r"(?:i|we)(?:'ve|\s+have)?\s+(?:had|got|gotten)\s+(?:that|it|this)\s+(?:wrong|mixed up|muddled)\b|"
    r"(?:i|we)\s+(?:was|were)\s+mistaken\b|(?:i|we)(?:'ve|\s+have)?\s+made\s+(?:a|an)\s+(?:mistake|error)\b|"
    r"my\s+(?:mistake|error|apologies|bad)\b"
    r")",
    _I,
)
CONCESSION_CONFIDENCE = 0.85


def conceded_corrections(conversation: Conversation, found: list[Signal]) -> list[Signal]:
    """A correction signal on each user turn (after an agent answer) whose next agent turn opens
    by conceding, unless a correction is already flagged there."""
    flagged = {s.node_id for s in found if s.type == SignalType.CORRECTION}
    out: list[Signal] = []
    answered = False
    pending = None
    for n in conversation.nodes:
        if n.type == NodeType.USER:
            pending = n if answered else None
        elif n.type == NodeType.AGENT:
            if pending is not None and pending.id not in flagged and _CONCESSION.search(n.content):
                out.append(
                    Signal(
                        type=SignalType.CORRECTION,
                        turn=pending.turn,
                        node_id=pending.id,
                        evidence=quote(pending.content),
                        confidence=CONCESSION_CONFIDENCE,
                    )
                )
            pending = None
            answered = True
    return out
