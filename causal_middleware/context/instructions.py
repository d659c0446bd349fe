"""A behavioural correction rewritten as an imperative rule for a system prompt."""

from __future__ import annotations

import re

_I = re.IGNORECASE
PRESCRIPTIVE = re.compile(
    r"(?:\byou(?:'re| are|'re not| are not| were| weren't| were not| aren't)\s+(?:really\s+|definitely\s+|clearly\s+)?(?:not\s+)?"
    r"(?:supposed|allowed|permitted|meant|required)\s+to|"
    r"\byou (?:really |definitely |clearly |honestly |absolutely |just |simply )?(?:should(?:n't| not)?|must(?:n't| not)?|need to|have to|"
    r"were supposed to|forgot to|didn't|did not|never|always|can't|cannot|can not|couldn't|won't)(?:\s+have)?|"
    r"\b(?:aren't|weren't) you (?:supposed|meant|required) to|\b(?:shouldn't|should|didn't|don't|couldn't|can't|wouldn't) you(?: have| need to)?|"
    r"\b(?:how|why) (?:can|could|would|did|do) you|"
    r"(?:^|(?<=[.!?]\s))\s*(?:please\s+)?(?:don't|do not|never)(?!\s+(?:worry|mind|bother|forget|hesitate)\b)|"
    r"\b(?:shouldn't|should not) (?:this|that|it)(?: have)?)"
    r"\s+(?P<clause>[^.;!?]+)",
    _I,
)
_TAG_QUESTION = re.compile(
    r",?\s*(?:are|aren't|do|don't|did|didn't|is|isn't|should|shouldn't|can|can't|will|won't|right)\s*(?:you|it|they|I)?\s*$",
    _I,
)


_DISAPPROVAL = re.compile(
    r"\b(?:that|this|it)(?:'s| is| was)\s+(?:really\s+|just\s+|so\s+)?(?:not|never)\s+"
    r"(?:ok|okay|acceptable|appropriate|fine|allowed|alright|all right|safe|professional)\b",
    _I,
)
_AGENT_ACT = re.compile(
    r"\byou(?:'ve| have)?\s+(?:just\s+|already\s+|actually\s+)?(?P<verb>[a-z]+(?:ed|wn|ne)|showed|gave|told|sent|said|put|let|read|made|left)\s+(?P<rest>[^.;!?]+)",
    _I,
)


# The agent's act asked back with the condition it skipped ("You sent it without my signature?"):
# a reproach, the act judged as not to be done that way.
_UNMET_CONDITION = re.compile(
    r"\byou(?:'ve| have)?\s+(?:just\s+|already\s+|actually\s+)?[a-z]+(?:ed|wn|ne|ent|ave|ook)\b"
    r"[^.;!?]*\bwithout\b[^.;!?]*\?",
    _I,
)


def disapproved_act(correction: str) -> str | None:
    """ "You just showed my entire card number. That's not okay." -> "Do not show the user's entire
    card number.": an act the user reports the agent did, judged unacceptable, as a prohibition."""
    if not (_DISAPPROVAL.search(correction) or _UNMET_CONDITION.search(correction)):
        return None
    m = _AGENT_ACT.search(correction)
    if not m:
        return None
    clause = f"{m.group('verb')} {m.group('rest').strip()}"
    for pat, rep in _PRONOUNS:
        clause = re.sub(pat, rep, clause)
    return f"Do not {_base_form(clause).rstrip(' ,')}."


_PRONOUNS = (
    (r"\bmy\b", "the user's"),
    (r"\bme\b", "the user"),
    (r"\bI'm\b", "the user is"),
    (r"\bI\b", "the user"),
    (r"\bmine\b", "the user's"),
)


def instruction_from(correction: str) -> str:
    """A behavioural correction rewritten as an imperative rule for a system prompt.

    ``"You're not supposed to give advice, you should refer me to an advisor."`` ->
    ``"Do not give advice. Refer the user to an advisor."``
    """
    rules = []
    for m in PRESCRIPTIVE.finditer(correction):
        lead = m.group(0)[: m.start("clause") - m.start(0)].lower()
        clause = m.group("clause").strip()
        clause = re.split(r"\s*(?:,|—|\s-\s)\s*(?:you\b|and you\b|but\b)", clause, maxsplit=1, flags=_I)[
            0
        ].strip()
        clause = _TAG_QUESTION.sub("", clause).strip()
        clause = re.sub(r"\s+(?:first|before anything else)$", " first", clause)
        lead_l = lead.strip()
        # "you shouldn't X" / "you're not allowed to X" forbid X; "didn't you / shouldn't you have X" ask for X.
        negative = (
            any(w in lead_l for w in ("not ", "n't", "never"))
            and not lead_l.startswith(
                ("shouldn't you", "didn't you", "don't you", "aren't you", "weren't you")
            )
            and "didn't" not in lead_l
            and "did not" not in lead_l
            and "forgot" not in lead_l
        ) or lead_l.startswith(("how ", "why "))
        for pat, rep in _PRONOUNS:
            clause = re.sub(pat, rep, clause)
        clause = clause.rstrip(" ,")
        if not clause:
            continue
        if clause.lower().startswith("have "):
            clause = clause[5:]
        clause = _base_form(clause)
        text = ("Do not " + clause) if negative else (clause[0].upper() + clause[1:])
        if "always" in lead and not negative:
            text = "Always " + clause
        rules.append(text.rstrip(".") + ".")
    return " ".join(rules) if rules else correction.strip()


_PAST = {
    "asked": "ask",
    "told": "tell",
    "checked": "check",
    "verified": "verify",
    "mentioned": "mention",
    "given": "give",
    "gave": "give",
    "said": "say",
    "offered": "offer",
    "referred": "refer",
    "confirmed": "confirm",
    "explained": "explain",
    "warned": "warn",
    "included": "include",
    "escalated": "escalate",
    "sent": "send",
    "informed": "inform",
    "reminded": "remind",
    "transferred": "transfer",
    "provided": "provide",
    "requested": "request",
    "recommended": "recommend",
    "suggested": "suggest",
    "disclosed": "disclose",
    "collected": "collect",
    "shared": "share",
}


_IRREGULAR = {"showed": "show", "shown": "show", "put": "put", "let": "let", "read": "read", "made": "make",
              "left": "leave", "done": "do", "gone": "go"}  # fmt: skip


def _base_form(clause: str) -> str:
    first, _, rest = clause.partition(" ")
    low = first.lower()
    base = _PAST.get(low) or _IRREGULAR.get(low)
    if base is None and low.endswith("ed") and len(low) > 4:
        stemmed = low[:-2]
        if len(stemmed) > 2 and stemmed[-1] == stemmed[-2] and stemmed[-1] not in "ls":
            stemmed = stemmed[:-1]  # stopped -> stop
        elif low.endswith("ied"):
            stemmed = low[:-3] + "y"
        base = stemmed
    return f"{base} {rest}".strip() if base else clause
