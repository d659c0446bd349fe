"""The detector's phrase families: correction, repair, clarification, sentiment, abandonment.

Generic English, each with the confidence of its strongest match; the segmenter reads them too.
"""

from __future__ import annotations

import re

_I = re.IGNORECASE

_DISAPPROVAL = (
    r"\b(?:that|this|it)(?:'s| is| was)\s+(?:really\s+|just\s+|so\s+)?(?:not|never)\s+"
    r"(?:ok|okay|acceptable|appropriate|fine|allowed|alright|all right|safe|professional)\b"
)
_CHALLENGE = (
    r"\byou\s+(?:just\s+|really\s+|simply\s+)?(?:can't|cannot|can not|couldn't|mustn't|won't|shouldn't)\s+(?!help\b)\w+|"
    r"\b(?:shouldn't|couldn't|can't|wouldn't|didn't|weren't)\s+you\s+\w+|"
    r"\b(?:how|why)\s+(?:can|could|would|did|do)\s+you\s+(?:even\s+|really\s+|possibly\s+|actually\s+)?"
    r"(?!help\b|tell\b|explain\b)\w+\s+(?:that|this|it|something|anything|yes|no|so)\b|"
    # "why did you promise me a refund?": what the agent did to the user, asked back
    r"\bwhy\s+did\s+you\s+(?!help\b|tell\b|explain\b|ask\b)\w+\s+(?:me|us)\b|"
    # "did you just post my address here?": the agent's act on the user's own things, asked back
    # in disbelief
    r"\bdid\s+you\s+just\s+(?!say\b|mean\b|ask\b|help\b)\w+\s+(?:my|our)\b[^.!?]*\?"
)

_UNMET_CONDITION = (
    r"\byou(?:'ve| have)?\s+(?:just\s+|already\s+|actually\s+)?[a-z]+(?:ed|wn|ne|ent|ave|ook)\b"
    r"[^.;!?]*\bwithout\b[^.;!?]*\?"
)

# (pattern, confidence). The first match per family counts; confidence is the strongest match.
CORRECTION_PATTERNS: tuple[tuple[re.Pattern[str], float], ...] = tuple(
    (re.compile(p, _I), c)
    for p, c in (
        (
            r"\b(?:no|nope|nah)\b[,.!]*\s+(?:that|it|this)(?:'s| is| was)\s+(?:not|wrong|incorrect|outdated|old)",
            0.95,
        ),
        # a contrastive focus that opens the turn: "not the loan, the hold!", "no, not my card - my pass"
        (
            r"^\s*(?:(?:no|nope|nah|um+|uh+)[,.!]*\s+)?not\s+(?:the|my|your|that|this)\s+[a-z]+(?:\s+[a-z]+)?\s*"
            r"(?:,|;|!|\s-\s|\s\u2013\s|\s\u2014\s)\s*(?:but\s+)?(?:the|my|your)\s+[a-z]+",
            0.85,
        ),
        (
            r"\b(?:that|this|it)(?:'s| is| was)\s+(?:just\s+|simply\s+|completely\s+|totally\s+)?(?:wrong|incorrect|inaccurate|not (?:right|correct|true|accurate))\b",
            0.95,
        ),
        (
            r"\b(?:that|this|it|that info(?:rmation)?|your info(?:rmation)?)(?:'s| is| was|'re| are)\s+(?:way\s+|really\s+|badly\s+)?(?:outdated|out of date|out-of-date|stale|old (?:info|information|news)|no longer (?:true|valid|correct|accurate|the case))",
            0.95,
        ),
        (r"\b(?:it|that|this|they|the \w+(?: \w+)?)(?:'s| is| are| was)\s+(?:actually|really)\s+\S+", 0.85),
        (
            r"\bactually,?\s+(?:it(?:'s| is)|that(?:'s| is)|the\b|they(?:'re| are)|we\b|you\b(?! know))(?!.*\b(?:another|one more|also|a (?:quick )?question)\b)",
            0.8,
        ),
        (r"\b(?:it|that|this|they)(?:'s| is| are| was)\s+[^.,;!?]{1,40},\s*not\s+\S+", 0.9),
        (r"\bnot\s+[^.,;!?]{1,40},\s*(?:it(?:'s| is)|but)\s+\S+", 0.85),
        (
            r"\b(?:changed|was changed|has changed|was updated|has been updated|got updated|went up|went down|was raised|was lowered|was increased|was reduced)\b(?:\s+(?:to|in|last|this|a while|recently|months|years))",
            0.85,
        ),
        (
            r"\bno longer\b|\bnot\s+\S+(?:\s+\S+)?\s+any\s?more\b|\b(?:don't|do not|doesn't|does not)\s+(?:use|accept|take|do|offer|support)\s+[^.,;!?]{1,30}\s+any\s?more\b",
            0.85,
        ),
        (r"\b(?:should be|is supposed to be|should have been|ought to be|is meant to be)\b", 0.8),
        (
            r"\byou(?:'re| are|'re not| are not| were| weren't| were not| aren't)\s+(?:really\s+|definitely\s+|clearly\s+)?(?:not\s+)?"
            r"(?:supposed|allowed|permitted|meant|required)\s+to\b|"
            r"\byou (?:really |definitely |clearly |honestly |absolutely |just )?(?:should(?:n't| not)?|must(?:n't| not)?|need to|have to|"
            r"were supposed to|forgot to|didn't|did not|never)\b(?:\s+have)?\s+\w+|"
            r"\b(?:aren't|weren't|shouldn't|should|don't|didn't) you (?:supposed to|have|be|need to|first)\b",
            0.85,
        ),
        (
            r"\b(?:that|this|it)\s+(?:can't|cannot|couldn't|doesn't|does not|don't)\s+(?:be|sound|seem|look)\s+right\b",
            0.9,
        ),
        (
            r"\b(?:shouldn't|should not|wasn't|was not|isn't) (?:this|that|it) (?:have |be )?(?:go|gone|going|be|been|sent|handled|escalated|supposed)\b",
            0.8,
        ),
        (
            r"\b(?:that's|that is|it's|this is)\s+(?:a\s+)?(?:different|the wrong|not the right)\s+\w+|\bthat(?:'s| is) not (?:it|what I (?:asked|meant))\b",
            0.85,
        ),
        (
            r"\b(?:that's|that is|this is|you're|you are|you've got it|you got it|you have it)\s+(?:wrong|mistaken|incorrect)\b",
            0.95,
        ),
        (r"\bthat(?:'s| is) not what (?:the|our|your) \w+ (?:says?|said|states?)\b", 0.9),
        # the answer addressed something else ("you answered a different question")
        (
            r"\byou(?:'ve| have)?\s+(?:just\s+)?(?:answered|addressed|responded to|replied to)\s+(?:a\s+)?"
            r"(?:(?:different|another|the wrong|some other)\s+(?:question|thing|one)|(?:something|anything)\s+else)\b",
            0.85,
        ),
        # Disapproval of what the agent just did ("that's not okay"), and challenges addressed to
        # the agent: a negated modal ("you can't promise that", "shouldn't you ...") or a
        # rhetorical "how can you ...". Requests ("can you ...") are not challenges.
        (_DISAPPROVAL, 0.85),
        (_CHALLENGE, 0.8),
        # the agent's act asked back with the condition it skipped ("You booked it without my
        # signature?"): a reproach, not a question
        (_UNMET_CONDITION, 0.8),
        (r"\b(?:wrong|incorrect|mistaken|inaccurate|false)\b", 0.7),
        (
            r"^\s*(?:no|nope|nah)\b[,.!]+\s+(?!thanks|thank|worries|problem|need|that's (?:all|it|fine|great|right|correct|everything)|"
            r"that is (?:all|it|fine)|I'm good|I am good|nothing)",
            0.75,
        ),
    )
)
REPAIR_PATTERNS = tuple(
    (re.compile(p, _I), c)
    for p, c in (
        (r"\bI (?:said|told you|asked(?: you)?|already (?:said|told you|asked))\b", 0.85),
        (r"\bI (?:meant|mean)\b|\bwhat I (?:meant|asked|was asking)\b|\bI was asking\b", 0.85),
        (r"\b(?:let me|to) (?:rephrase|clarify|be clear)\b|\bin other words\b", 0.8),
        (
            r"\b(?:that's|that is|this is) not what I (?:asked|meant|wanted|said)\b|\byou misunderstood\b|\bnot what I (?:asked|meant)\b",
            0.9,
        ),
        (r"\bI(?:'m| am) asking (?:about|for)\b", 0.75),
        # the answer said to be about something other than what was asked ("Sorry, that's about
        # something else.", "that doesn't answer my question"); "that" points back at the answer
        # ("this is a different question, ..." may open a new one, and is left out)
        (
            r"\b(?:that's|that is|that was|it's) (?:all )?about something else\b|"
            r"\b(?:that|this|it) (?:doesn't|does not|didn't|did not) answer (?:my|the) question\b|"
            r"\b(?:that's|that is) (?:a |an )?(?:different|other|separate) (?:thing|matter|topic|subject)\b",
            0.85,
        ),
        # "No, different thing." / "no, another question": the answer was about something else (a
        # bare "different question - ..." opens a new one; the "no" is what rejects the answer)
        (
            r"^\W*no\b[,.!\s-]+(?:that's\s+|that is\s+|it's\s+|this is\s+|i meant\s+)?(?:a\s+|an\s+)?"
            r"(?:different|another|other|separate)\s+(?:thing|question|matter|topic|issue|one|subject)\b|"
            r"\byou(?:'re| are)\s+answering\s+(?:a\s+|an\s+)?(?:different|another|other|the wrong)\b",
            0.85,
        ),
    )
)
# The user says the answer was about something other than what they asked ("That's not what I
# asked", "you misunderstood", "no, a different thing"): what it said of that other thing is no
# claim about theirs.
MISREAD_PATTERN = re.compile(
    r"\b(?:that's|that is|this is) not what I (?:asked|meant)\b|\bnot what I (?:asked|meant)\b|"
    r"\byou misunderstood\b|\b(?:that's|that is|this is|it's) (?:a |an )?(?:different|other|separate) "
    r"(?:thing|question|matter|topic|subject)\b|\b(?:doesn't|does not|didn't|did not) answer (?:my|the) question\b|"
    r"\b(?:that's|that is|this is|it's|that was) (?:all )?about something else\b|"
    r"^\W*no\b[,.!\s-]+(?:that's\s+|that is\s+|it's\s+|this is\s+|i meant\s+)?(?:a\s+|an\s+)?"
    r"(?:different|another|other|separate)\s+(?:thing|question|matter|topic|issue|subject)\b|"
    r"\byou(?:'re| are)\s+answering\s+(?:a\s+|an\s+)?(?:different|another|other|the wrong)\b",
    _I,
)
CLARIFICATION_PATTERNS = tuple(
    (re.compile(p, _I), c)
    for p, c in (
        (r"\bwhat do you mean\b|\bwhat does (?:that|this|it) mean\b", 0.85),
        (
            r"\b(?:can|could) you (?:clarify|explain(?: that| what you mean)?|be more specific|elaborate)\b",
            0.8,
        ),
        (
            r"\bI (?:don't|do not) (?:understand|get it|follow)\b|\b(?:I'm|I am) (?:confused|lost)\b|\bconfusing\b",
            0.85,
        ),
        (r"\bwhich one\b|\bwhat exactly\b|^\s*huh\??\s*$", 0.7),
    )
)
SENTIMENT_PATTERNS = tuple(
    (re.compile(p, _I), c)
    for p, c in (
        (
            r"\bfrustrat\w*|\bannoy\w*|\bfed up\b|\bsick of\b|\bridiculous\b|\bunacceptable\b|\bfurious\b|\bangry\b",
            0.9,
        ),
        (
            r"\buseless\b|\bunhelpful\b|\bnot (?:very |at all )?helpful\b|\bterrible\b|\bawful\b|\bhorrible\b|\bpathetic\b",
            0.9,
        ),
        (
            r"\bwaste of (?:my )?time\b|\bdisappoint\w*|\bupset\b|\bcome on\b|\bseriously\?|\bugh+\b|\bthis is (?:a joke|bad|not ok|not okay)\b",
            0.8,
        ),
        (
            r"\bcan't believe\b|\bkeeps? (?:failing|erroring|breaking|crashing|happening)\b|\bagain\?!|!{2,}",
            0.75,
        ),
    )
)
ABANDON_PATTERNS = (
    re.compile(
        r"\b(?:forget it|never ?mind|i give up|don't bother|i'll (?:just )?(?:call|go|ask|figure|do it|find)|"
        r"i'll look elsewhere|whatever)\b",
        _I,
    ),
)
# Phrases that look like a signal but are benign.
BENIGN = re.compile(
    r"\b(?:no worries|no problem|not wrong|nothing wrong|that's right|that is right|you're right|perfect|"
    r"that's correct|that is correct|makes sense)\b",
    _I,
)
NEGATIVE_FEEDBACK = re.compile(r"👎|\bthumbs[- ]down\b|\b(?:rating|rated|rate)\s*:?\s*[12]\s*/\s*5\b", _I)
