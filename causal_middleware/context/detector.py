"""The dissatisfaction detector, offline (rule-based, deterministic) form.

Patterns are generic English: corrections ("no, that's wrong", "actually it's X", "that's
outdated", "it's X, not Y", "you should have ..."), conversational repair ("I said ...", "I meant
..."), clarification requests, negative sentiment; tool errors come from tool outputs; repetition
is a near-duplicate user turn; drift is a reply that shares almost no content words with the
question; abandonment is a session that ends right after an unresolved signal.
:func:`detect` dispatches to this form or to the LLM form in :mod:`.detector_llm`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Literal

from langchain_core.language_models import BaseChatModel

from causal_middleware.context.conversation import Conversation, ConversationNode, NodeType
from causal_middleware.context.delta import behavioural_objection, relayed_conflict, relayed_contradiction
from causal_middleware.context.signals import Detection, Signal, SignalType
from causal_middleware.context.text import (
    MEASURED_KINDS,
    QUESTION_WORDS,
    content_tokens,
    expand_informal,
    find_values,
    in_answer_units,
    jaccard,
    quote,
    same_value,
    sentences,
    share_stem,
    stem,
    term_seq,
    term_set,
)

_I = re.IGNORECASE

_DISAPPROVAL = (
    r"\b(?:that|this|it)(?:'s| is| was)\s+(?:really\s+|just\s+|so\s+)?(?:not|never)\s+"
    r"(?:ok|okay|acceptable|appropriate|fine|allowed|alright|all right|safe|professional)\b"
)
_CHALLENGE = (
    r"\byou\s+(?:just\s+|really\s+|simply\s+)?(?:can't|cannot|can not|couldn't|mustn't|won't|shouldn't)\s+(?!help\b)\w+|"
    r"\b(?:shouldn't|couldn't|can't|wouldn't|didn't|weren't)\s+you\s+\w+|"
    r"\b(?:how|why)\s+(?:can|could|would|did|do)\s+you\s+(?:even\s+|really\s+|possibly\s+|actually\s+)?"
    r"(?!help\b|tell\b|explain\b)\w+\s+(?:that|this|it|something|anything)\b"
)

# (pattern, confidence). The first match per family counts; confidence is the strongest match.
CORRECTION_PATTERNS: tuple[tuple[re.Pattern[str], float], ...] = tuple(
    (re.compile(p, _I), c)
    for p, c in (
        (
            r"\b(?:no|nope|nah)\b[,.!]*\s+(?:that|it|this)(?:'s| is| was)\s+(?:not|wrong|incorrect|outdated|old)",
            0.95,
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
        # Disapproval of what the agent just did ("that's not okay"), and challenges addressed to
        # the agent: a negated modal ("you can't promise that", "shouldn't you ...") or a
        # rhetorical "how can you ...". Requests ("can you ...") are not challenges.
        (_DISAPPROVAL, 0.85),
        (_CHALLENGE, 0.8),
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
    )
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
_BENIGN = re.compile(
    r"\b(?:no worries|no problem|not wrong|nothing wrong|that's right|that is right|you're right|perfect|"
    r"that's correct|that is correct|makes sense)\b",
    _I,
)
_ERROR_OUTPUT = re.compile(
    r"^\s*(?:error|exception|traceback|fatal)\b|\b(?:status(?:_code)?|http)\W{0,3}[45]\d\d\b|"
    r"\b(?:failed|failure|timed? ?out|not found|invalid|unauthori[sz]ed|forbidden|denied|unknown parameter)\b",
    _I,
)
# The agent says it could not answer; a user turn that then states the answer corrects the gap.
_AGENT_FAILED = re.compile(
    r"\b(?:couldn't|could not|can't|cannot|wasn't able to|was not able to|unable to|not able to) (?:find|locate|answer)\b|"
    r"\b(?:don't|do not) have (?:any )?(?:information|details|data|anything|an answer)\b|"
    r"\bno (?:information|results|matching (?:entries|results))\b|\bI (?:don't|do not) know\b|"
    r"\b(?:doesn't|does not|don't|do not) (?:seem to )?(?:cover|include|mention|have|contain)\b|"
    r"\bthere(?:'s| is) nothing (?:on|about|in|for)\b",
    _I,
)
_STATEMENT = re.compile(
    r"\b(?:is|are|was|were|it's|that's|they're|costs?|takes?|lasts?|not|told|said|says|heard)\b", _I
)
_NEGATIVE_FEEDBACK = re.compile(r"👎|\bthumbs[- ]down\b|\b(?:rating|rated|rate)\s*:?\s*[12]\s*/\s*5\b", _I)

REPETITION_THRESHOLD = 0.6
DRIFT_COVERAGE = 0.15


def detect(
    conversation: Conversation,
    *,
    mode: Literal["offline", "llm"] = "offline",
    model: BaseChatModel | None = None,
) -> Detection:
    """Detect dissatisfaction in a session with the offline rules or, given a chat model, the LLM.

    ``mode="llm"`` without a model returns a Detection with ``status="not_run"``.
    """
    if mode == "offline":
        return detect_offline(conversation)
    if mode == "llm":
        from causal_middleware.context.detector_llm import detect_llm

        return detect_llm(conversation, model)
    raise ValueError(f"unknown detector mode {mode!r}; expected 'offline' or 'llm'")


def detect_offline(conversation: Conversation) -> Detection:
    """The rule-based detector: every signal with its evidence quote and turn."""
    signals: list[Signal] = []
    user_nodes = conversation.user_turns
    for node in user_nodes:
        signals += _unrelated_weak_cues(conversation, node, _language_signals(node))
    signals += _supplied_answers(conversation, signals)
    signals += _contradictions(conversation, signals)
    signals += _pushback(conversation, signals)
    signals += _restated_meaning(conversation, signals)
    signals += _tool_errors(conversation)
    signals += _repetitions(user_nodes)
    signals += _drift(conversation)
    signals += _feedback(conversation)
    signals += _abandonment(conversation, signals)
    signals.sort(key=lambda s: (s.turn, s.type.value))
    return Detection.from_signals(conversation.session_id, signals)


def _best(patterns: tuple[tuple[re.Pattern[str], float], ...], text: str) -> tuple[float, str] | None:
    best: tuple[float, str] | None = None
    for pattern, conf in patterns:
        m = pattern.search(text)
        if m and (best is None or conf > best[0]):
            best = (conf, m.group(0))
    return best


def _language_signals(node: ConversationNode) -> list[Signal]:
    text = expand_informal(node.content)
    benign = _BENIGN.search(text) is not None
    out = []
    for sig_type, patterns in (
        (SignalType.CORRECTION, CORRECTION_PATTERNS),
        (SignalType.CONVERSATIONAL_REPAIR, REPAIR_PATTERNS),
        (SignalType.CLARIFICATION_REQUEST, CLARIFICATION_PATTERNS),
        (SignalType.NEGATIVE_SENTIMENT, SENTIMENT_PATTERNS),
    ):
        hit = _best(patterns, text)
        if hit is None:
            continue
        conf, _ = hit
        if benign:
            conf *= 0.5
        out.append(
            Signal(type=sig_type, turn=node.turn, node_id=node.id, evidence=quote(text), confidence=conf)
        )
    if _NEGATIVE_FEEDBACK.search(text):
        out.append(
            Signal(
                type=SignalType.EXPLICIT_FEEDBACK,
                turn=node.turn,
                node_id=node.id,
                evidence=quote(text),
                confidence=1.0,
            )
        )
    return out


WEAK_CUE = 0.75
_WEAK_WORD = re.compile(r"\b(?:wrong|incorrect|mistaken|inaccurate|false)\b", _I)
_INDEFINITE_CUE = re.compile(
    r"\b(?:a|an|any|some)\s+(?:wrong|incorrect|mistaken|inaccurate|false)\s+[a-z]", _I
)


def _unrelated_weak_cues(
    conversation: Conversation, node: ConversationNode, found: list[Signal]
) -> list[Signal]:
    """Drop weak correction cues (a bare "wrong") in a turn that asks a new question sharing no
    word with the agent's last answer: "I got the wrong size, how do I return it?" asks for help,
    it does not correct the answer."""
    if not any(s.type == SignalType.CORRECTION and s.confidence <= WEAK_CUE for s in found):
        return found
    sents = sentences(node.content)
    if not sents or statement_kind(sents[-1]) != "question":
        return found
    # The cue sits in the user's account of their own situation ("I got the wrong size, ..."):
    # it is about what happened to them, not about the answer.
    clauses = [c for sent in sents for c in re.split(r"[,;:]", sent)]
    if any(_WEAK_WORD.search(c) and statement_kind(c) == "personal" for c in clauses):
        return [s for s in found if not (s.type == SignalType.CORRECTION and s.confidence <= WEAK_CUE)]
    # "... for an incorrect charge?": after an indefinite article the cue describes something the
    # question introduces, not the answer it would judge.
    if all(_INDEFINITE_CUE.search(sent) or not _WEAK_WORD.search(sent) for sent in sents):
        return [s for s in found if not (s.type == SignalType.CORRECTION and s.confidence <= WEAK_CUE)]
    i = conversation.index(node.id)
    answer = next((n for n in reversed(conversation.nodes[:i]) if n.type == NodeType.AGENT), None)
    if answer is not None and set(term_seq(node.content)) & set(term_seq(answer.content)):
        return found
    return [s for s in found if not (s.type == SignalType.CORRECTION and s.confidence <= WEAK_CUE)]


# A negation in a reply: "can't", "nothing", "no ...", "not", "without".
_NEGATION = re.compile(r"\b(?:no|not|nothing|none|never|nowhere|cannot|without)\b|n't\b", _I)


# The agent's own negated ability or act whose object is a negative-polarity "anything" / "any
# ...": the reply reports that a look-up came back empty, however it names the subject ("I wasn't
# able to dig up anything on ...", "I can't see any mention of ...").
_NEGATED_SEARCH = re.compile(
    r"\b(?:i|we)\s+(?:really\s+|just\s+)?(?:couldn't|could not|can't|cannot|wasn't able to|was not able to|"
    r"weren't able to|am unable to|was unable to|didn't|did not|don't|do not)\s+(?:[a-z]+\s+){1,2}?(?:anything|any\b)",
    _I,
)


# The agent speaking of its own knowledge or sources ("I don't have ...", "my search ...", "our
# docs ..."): with a negation, the reply is about what it could not find, not about the world
# ("we don't charge for that" answers; "our pages don't cover that" reports an absence).
_OWN_SOURCES = re.compile(r"^(?:[^.!?]*[,.!?]\s*)?(?:i|i'm|i've|my|our\s+[a-z]+)\b", _I)
# ... whose negation bears on the thing asked: an anaphor or an indefinite in the same clause
# ("I don't have that", "our pages don't cover it", "my search returned nothing").
_NEGATED_OBJECT = re.compile(
    r"\bnothing\b|(?:n't|\bnot|\bno|\bnever)\b[^,.;!?]*\b(?:that|this|it|anything|any|something|one)\b", _I
)


def states_absence(reply: str, asked: str | list[str]) -> bool:
    """The reply says the thing asked about is not there: it negates, names the subject that was
    asked or searched for (shares a word with ``asked``) or reports an empty look-up (a negated
    act with an "anything" / "any" object), and states no value of its own. Read from
    that structure, not from a list of "not found" phrasings ("I can't see anything on the X",
    "there's nothing about the X that I can find", "no X is listed")."""
    text = expand_informal(reply)
    if not _NEGATION.search(text) or text.rstrip().endswith("?"):
        return False
    if any(kind in MEASURED_KINDS for kind, _ in find_values(text)):
        return False
    if _NEGATED_SEARCH.search(text) or (_OWN_SOURCES.search(text) and _NEGATED_OBJECT.search(text)):
        return True
    texts = [asked] if isinstance(asked, str) else asked
    return share_stem(
        term_set(text, drop=QUESTION_WORDS), {t for a in texts for t in term_set(a, drop=QUESTION_WORDS)}
    )


def _supplied_answers(conversation: Conversation, found: list[Signal]) -> list[Signal]:
    """A user turn that states a value right after the agent said it could not find the answer:
    a stock "could not find" phrase, or any reply that states the asked subject's absence
    (:func:`states_absence`) followed by a statement carrying a value."""
    out = []
    corrected = {s.node_id for s in found if s.type == SignalType.CORRECTION}
    last_agent: ConversationNode | None = None
    asked: list[str] = []
    for n in conversation.nodes:
        if n.type == NodeType.AGENT:
            last_agent = n
        elif n.type in (NodeType.KB_RETRIEVAL, NodeType.SKILL_LOOKUP):
            asked.append(n.content)
        elif n.type == NodeType.USER:
            statements = [sent for sent in sentences(n.content) if not sent.endswith("?")]
            failed = last_agent is not None and (
                bool(_AGENT_FAILED.search(last_agent.content))
                and any(find_values(sent) or _STATEMENT.search(sent) for sent in statements)
                or states_absence(last_agent.content, asked)
                and any(find_values(sent) for sent in statements)
            )
            asked = [n.content]
            if last_agent is not None and n.id not in corrected and failed:
                out.append(
                    Signal(
                        type=SignalType.CORRECTION,
                        turn=n.turn,
                        node_id=n.id,
                        evidence=quote(f"{n.content} (after: {last_agent.content})"),
                        confidence=0.85,
                    )
                )
            last_agent = None
    return out


CONTRADICTION_KINDS = MEASURED_KINDS

# Leading words that carry no subject ("well, ...", "hmm, ...", "oh ...").
_LEAD_IN = re.compile(
    r"^\s*(?:(?:well|hmm+|oh|ok|okay|so|but|and|wait|hey|yes|yeah|no(?!\s+one\b)|nope|um+|uh+|whoa|sorry)\b[,.!]*\s*)+",
    _I,
)
# A sentence that opens with a subject: a pronoun, a determiner or possessive, or a value.
_SUBJECT_OPENING = re.compile(
    r"^(?:it|it's|that|that's|this|they|they're|there|there's|these|those|the|a|an|your|its|their|his|her|"
    r"you|you're|everything|nothing|[$€£\d])",
    _I,
)
_FIRST_PERSON = re.compile(r"^(?:i|i'm|i've|i'd|my|me|we|we're|our|mine)\b", _I)
_REQUEST = re.compile(
    r"^(?:please|can|could|would|will|let's|let me)\b|^(?:i|we)(?:'d| would| want| need| wanna)\b", _I
)


# A hypothetical states no value ("24 months would have been nicer", "if it were 2 days ...").
_HYPOTHETICAL = re.compile(r"\b(?:would|could|might)(?:'ve|\s+have)\b|^if\b|\bwish\b", _I)
_INTERJECTION = re.compile(r"^[a-z]+,\s+(?=\w)", _I)
# A value proposed as a question the asker expects agreement with: a negative question about the
# answer's subject ("isn't it 30 days?", "wasn't that raised to 30 days?") or a value with a tag
# ("30 days, surely?", "30 days, right?").
_PROPOSAL = re.compile(
    r"^(?:isn't|wasn't|aren't|weren't|doesn't|didn't|hasn't|haven't|shouldn't|won't)\s+(?:it|that|this|they)\b|"
    r",\s*(?:surely|right|no|correct|isn't it|wasn't it|aren't they)\s*\?+\s*$",
    _I,
)
# A value stated for the answer's subject inside a longer sentence ("last time I looked it was 30
# days"): an anaphoric subject and a copula right before it.
_ANAPHORIC_COPULA = re.compile(
    r"\b(?:it|that|this|they)(?:'s|'re| is| was| are| were| has been| had been| used to be)\s+"
    r"(?:now\s+|actually\s+|still\s+|only\s+|just\s+|really\s+)?$",
    _I,
)


def statement_kind(sentence: str) -> str:
    """``"request"``, ``"question"``, ``"personal"`` (the user about themselves), ``"assertion"``
    (a statement about the world or the agent's answer) or ``"other"``: the shape of a sentence,
    read from its opening, with no word list about what it says."""
    text = expand_informal(sentence).strip()
    if text.endswith("?"):
        return "question"
    # One interjection set off by a comma ("weird, ...", "honestly, ...") carries no subject.
    body = _INTERJECTION.sub("", _LEAD_IN.sub("", text))
    if not body:
        return "other"
    if _REQUEST.match(body):
        return "request"
    if _FIRST_PERSON.match(body):
        return "personal"
    if _SUBJECT_OPENING.match(body):
        return "assertion"
    return "other"


def _contradictions(conversation: Conversation, found: list[Signal]) -> list[Signal]:
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
    for last_agent, n in _replies(conversation, found):
        said = find_values(last_agent.content)
        said_strong = [(k, v) for k, v in said if k in CONTRADICTION_KINDS]
        answer_terms = set(term_seq(last_agent.content))
        for sent in sentences(n.content):
            shape = statement_kind(sent)
            body = _LEAD_IN.sub("", expand_informal(sent).strip())
            if shape == "question" and _PROPOSAL.search(body):
                shape = "assertion"
            if shape in ("question", "request") or _HYPOTHETICAL.search(body):
                continue
            values = in_answer_units(find_values(sent), said)
            if shape in ("other", "personal") and any(
                _ANAPHORIC_COPULA.search(sent[: sent.find(v)]) for _, v in values if v in sent
            ):
                shape = "assertion"
            contrast = any(same_value(v, a) for _, v in values for _, a in said)
            terms = set(term_seq(sent))
            refers = not terms or bool(terms & answer_terms)
            stated = bool(_STATEMENT.search(sent))
            # "The letter says X", "I was told X": the user reports what a source states,
            # an assertion about the world whatever the sentence opens with.
            reported = bool(_REPORTED.search(sent))
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
            if hit is None and not said_strong and stated and (refers or contrast):
                hit = _other_count(values, said)
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
                break
    return out


# Reported speech: a source's statement relayed by the user ("the letter says", "I was told",
# "according to ..."). Grammar, not a domain's vocabulary.
_REPORTED = re.compile(
    r"\b(?:says?|said|saying|told|tells|states?|stated|stating|shows?|showed|shown|showing|reads|quotes?|"
    r"quoted|lists?|listed|mentions?|mentioned|heard|according to)\b",
    _I,
)


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
        if kind == "number" and not _YEAR.fullmatch(value) and value != count:
            return value, [count], 0.75
    return None


_YEAR = re.compile(r"(?:19|20)\d\d")

# A prohibition addressed to the agent ("Don't read out my ...", "Never tell ...") and a rhetorical
# question about what the agent may do ("How can you be sure of ...?", "Why would you send ...?").
# Their shape is generic; whether they push back on the answer is decided by what they refer to.
_PROHIBITION = re.compile(
    r"^(?:please\s+)?(?:don't|do not|never)\s+(?!worry\b|mind\b|bother\b|forget\b|hesitate\b)(?P<verb>[a-z]+)\b",
    _I,
)
_RHETORICAL = re.compile(
    r"^(?:so\s+)?(?:how|why)\s+(?:can|could|would|did|do|are)\s+you\s+(?:even\s+|just\s+)?"
    r"(?!help\b|tell\b|explain\b|show\b|find\b|check\b|make sure\b|get\b|know\b|see\b)(?P<verb>[a-z]+)\b",
    _I,
)


def _pushback(conversation: Conversation, found: list[Signal]) -> list[Signal]:
    """A user turn that pushes back on what the agent just said or did, with no correction words:
    a prohibition or a rhetorical "how can you ...?" whose object is what the answer was about (it
    shares a content word with the answer). "Don't forget to ..." and a question about something
    the answer never mentioned are not pushback."""
    out = []
    for last_agent, n in _replies(conversation, found):
        answer_terms = set(term_seq(last_agent.content))
        for sent in sentences(expand_informal(n.content)):
            body = _LEAD_IN.sub("", sent.strip())
            m = _PROHIBITION.match(body) or _RHETORICAL.match(body)
            if (
                (m and share_stem(set(term_seq(body[m.start("verb") :])), answer_terms))
                or behavioural_objection(body)
                or relayed_conflict(n.content)
                or relayed_contradiction(n.content, last_agent.content)
            ):
                out.append(
                    Signal(
                        type=SignalType.CORRECTION,
                        turn=n.turn,
                        node_id=n.id,
                        evidence=quote(f"{n.content} (after: {last_agent.content})"),
                        confidence=0.8,
                    )
                )
                break
    return out


def _restated_meaning(conversation: Conversation, found: list[Signal]) -> list[Signal]:
    """A repair that says what the user meant and carries a measured value the answer never
    stated ("no, I meant the annual pass (90 days)"): the user supplies the answer the agent
    missed, a correction whatever cue words the repair itself uses."""
    repaired = {s.node_id for s in found if s.type == SignalType.CONVERSATIONAL_REPAIR}
    out = []
    for last_agent, n in _replies(conversation, found):
        if n.id not in repaired:
            continue
        said = [v for _, v in find_values(last_agent.content)]
        new = [
            v
            for kind, v in find_values(n.content)
            if kind in MEASURED_KINDS and not any(same_value(v, a) for a in said)
        ]
        if new:
            out.append(
                Signal(
                    type=SignalType.CORRECTION,
                    turn=n.turn,
                    node_id=n.id,
                    evidence=quote(f"{n.content} (the agent said: {last_agent.content})"),
                    confidence=0.8,
                )
            )
    return out


def _replies(
    conversation: Conversation, found: list[Signal]
) -> Iterator[tuple[ConversationNode, ConversationNode]]:
    """(agent turn, the user turn right after it), for user turns not flagged as corrections yet."""
    flagged = {s.node_id for s in found if s.type == SignalType.CORRECTION}
    last_agent: ConversationNode | None = None
    for n in conversation.nodes:
        if n.type == NodeType.AGENT:
            last_agent = n
        elif n.type == NodeType.USER:
            if last_agent is not None and n.id not in flagged:
                yield last_agent, n
            last_agent = None


def _tool_errors(conversation: Conversation) -> list[Signal]:
    out = []
    for n in conversation.of_type(NodeType.TOOL_CALL, NodeType.KB_RETRIEVAL, NodeType.SKILL_LOOKUP):
        head = n.output[:300]
        if n.status == "error" or (n.type == NodeType.TOOL_CALL and _ERROR_OUTPUT.search(head)):
            out.append(
                Signal(
                    type=SignalType.TOOL_EXECUTION_ERROR,
                    turn=n.turn,
                    node_id=n.id,
                    evidence=quote(f"{n.name or 'tool'}: {n.output}"),
                    confidence=1.0,
                )
            )
    return out


def _repetitions(user_nodes: list[ConversationNode]) -> list[Signal]:
    out = []
    seen: list[tuple[ConversationNode, set[str]]] = []
    for node in user_nodes:
        terms = term_set(node.content)
        if len(terms) >= 3:
            for prev, prev_terms in seen:
                sim = jaccard(terms, prev_terms)
                if sim >= REPETITION_THRESHOLD:
                    conf = round(min(1.0, 0.75 + 0.25 * sim), 3)
                    out.append(
                        Signal(
                            type=SignalType.REPETITION,
                            turn=node.turn,
                            node_id=node.id,
                            evidence=quote(f"{node.content} (repeats turn {prev.turn})"),
                            confidence=conf,
                        )
                    )
                    break
        seen.append((node, terms))
    return out


def _drift(conversation: Conversation) -> list[Signal]:
    """A reply that covers almost none of the content words of the question it answers."""
    out = []
    last_user: ConversationNode | None = None
    for n in conversation.nodes:
        if n.type == NodeType.USER:
            last_user = n
        elif n.type == NodeType.AGENT and last_user is not None:
            question = {stem(t) for t in content_tokens(last_user.content)}
            if len(question) >= 3 and "?" in last_user.content:
                reply = term_set(n.content)
                cov = len(question & reply) / len(question)
                if cov < DRIFT_COVERAGE and not n.content.rstrip().endswith("?"):
                    out.append(
                        Signal(
                            type=SignalType.SEMANTIC_DRIFT,
                            turn=n.turn,
                            node_id=n.id,
                            evidence=quote(n.content),
                            confidence=round(0.8 - cov, 3),
                        )
                    )
            last_user = None
    return out


def _feedback(conversation: Conversation) -> list[Signal]:
    return [
        Signal(
            type=SignalType.EXPLICIT_FEEDBACK,
            turn=f.turn,
            evidence=quote(f.comment or "negative feedback"),
            confidence=1.0,
        )
        for f in conversation.feedback
        if f.rating == "negative"
    ]


def _abandonment(conversation: Conversation, signals: list[Signal]) -> list[Signal]:
    """The session ends on the user's side right after an unresolved signal, or with a give-up line."""
    if not conversation.nodes:
        return []
    users = conversation.user_turns
    if not users:
        return []
    last_user = users[-1]
    after = [
        n for n in conversation.nodes[conversation.index(last_user.id) + 1 :] if n.type == NodeType.AGENT
    ]
    unresolved = any(
        s.node_id == last_user.id
        and s.type
        in (
            SignalType.CORRECTION,
            SignalType.NEGATIVE_SENTIMENT,
            SignalType.REPETITION,
            SignalType.CONVERSATIONAL_REPAIR,
        )
        for s in signals
    )
    give_up = any(p.search(last_user.content) for p in ABANDON_PATTERNS)
    earlier_signal = any(s.turn < last_user.turn and s.type != SignalType.SEMANTIC_DRIFT for s in signals)
    if (unresolved and not after) or (give_up and earlier_signal):
        return [
            Signal(
                type=SignalType.SESSION_ABANDONMENT,
                turn=last_user.turn,
                node_id=last_user.id,
                evidence=quote(last_user.content),
                confidence=0.9 if give_up else 0.8,
            )
        ]
    return []
