"""The recommender: explore the workspace, decide the four dimensions, resolve authority, and
propose one CREATE / UPDATE / DELETE / NO_ACTION change with a unified diff.

``mode="explore"`` uses the six workspace tools (typically 3-5 calls: read the faulty source,
search the knowledge base for the expected content, read the candidates, list skills or read
the system prompt for consistency). ``mode="passive"`` decides from the session alone (the
ablation): it cannot see sources the agent never retrieved, so it cannot tell a stale duplicate
from the only copy, or a retrieval failure from stale content. Nothing is applied here.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any, Literal

from causal_middleware.context.authority import AuthorityDecision, SourceInfo, resolve_authority
from causal_middleware.context.conversation import Conversation, NodeType
from causal_middleware.context.delta import Delta, claimed_subject, reports_absence
from causal_middleware.context.explorer import WorkspaceExplorer
from causal_middleware.context.markup import html_text
from causal_middleware.context.recommendation import (
    Classification,
    Dimension,
    Dimensions,
    Operation,
    Recommendation,
    append_line,
    claim_sentence,
    make_id,
    replace_value,
    unified_diff,
)
from causal_middleware.context.root_cause import ContextDiagnosis
from causal_middleware.context.signal_patterns import MISREAD_PATTERN
from causal_middleware.context.text import (
    CONVERSATION_WORDS,
    QUESTION_WORDS,
    contains,
    content_tokens,
    coverage,
    find_values,
    jaccard,
    normalize,
    quote,
    relevance,
    share_stem,
    slugify,
    stem,
    subject_phrase,
    term_set,
    value_kind,
)
from causal_middleware.context.tool_errors import allowed_values, renamed_argument
from causal_middleware.context.workspace import (
    KBEntry,
    Workspace,
    page_title,
    read_page,
)

Mode = Literal["explore", "passive"]

SAME_CLAIM = 0.6  # Jaccard of two sentences' words (values removed): the same claim
RELEVANT = 0.5  # relevance() of a sentence to what the user asked about
DUPLICATE_TITLE = 0.5  # Jaccard of titles: two entries on the same topic
INSTRUCTION_PRESENT = 0.6  # share of an instruction's words already in the system prompt
MIN_RULE_TERMS = 2  # content words a rule needs before the prompt can be said to state it
_DROP = {stem(w) for w in CONVERSATION_WORDS}
_DELETE_CONFIDENCE = {"supersession": 0.9, "status": 0.9, "hierarchy": 0.8, "recency": 0.75, "ownership": 0.7}


def recommend(
    conversation: Conversation,
    diagnosis: ContextDiagnosis,
    workspace: Workspace,
    *,
    mode: Mode = "explore",
) -> Recommendation:
    """One reviewable recommendation for a diagnosed session."""
    if mode not in ("explore", "passive"):
        raise ValueError(f"unknown recommender mode {mode!r}; expected 'explore' or 'passive'")
    return _Recommender(conversation, diagnosis, workspace, mode).run()


class _Recommender:
    def __init__(
        self, conversation: Conversation, diagnosis: ContextDiagnosis, workspace: Workspace, mode: Mode
    ) -> None:
        self.conv = conversation
        self.diag = diagnosis
        self.ws = workspace
        self.mode = mode
        self.ex = WorkspaceExplorer(workspace)
        self.has_delta = diagnosis.delta is not None
        self.delta: Delta = diagnosis.delta or Delta(kind="none")
        self.root = conversation.node(diagnosis.root_node_id) if diagnosis.root_node_id else None
        question = (
            conversation.node(self.delta.question_node_id)
            if self.delta and self.delta.question_node_id
            else None
        )
        anchor = (
            conversation.node(self.delta.anchor_node_id) if self.delta and self.delta.anchor_node_id else None
        )
        self.question = question.content if question else ""
        self.correction = anchor.content if anchor is not None and anchor.type == NodeType.USER else ""
        claimed = claimed_subject(self.correction, self.delta.expected)
        # What the user is talking about: the subject they state a value for, else their question.
        self.subject_text = claimed or self.question
        self.subject = term_set(self.subject_text) - _DROP
        # What the agent actually got to use: the top hit of each search and every direct read.
        self.retrieved = {n.source for n in conversation.nodes if n.source}

    @property
    def explore(self) -> bool:
        return self.mode == "explore"

    # --- entry ----------------------------------------------------------------------------
    def run(self) -> Recommendation:
        d = self.diag
        if d.status != "ok" or not self.has_delta:
            return self._no_action(Classification.AMBIGUOUS, f"nothing to fix: diagnosis {d.status}", 0.3)
        if self.delta.kind == "behaviour" or d.component_type == "system_prompt":
            return self._system_prompt()
        if d.component_type == "tool":
            return self._tool()
        if d.component_type == "skill":
            return self._skill()
        return self._knowledge()

    # --- builders -------------------------------------------------------------------------
    def _rec(
        self,
        op: Operation,
        target: str | None,
        *,
        before: str | None,
        after: str | None,
        change: str,
        classification: Classification,
        confidence: float,
        rationale: str,
        dims: Dimensions,
        authority: str | None = None,
        rule: str | None = None,
    ) -> Recommendation:
        return Recommendation(
            id=make_id(self.conv.session_id, op, target, after),
            session_id=self.conv.session_id,
            operation=op,
            target_path=target,
            change_text=change,
            authoritative_source=authority,
            authority_rule=rule,
            classification=classification,
            confidence=confidence,
            dimensions=dims,
            rationale=rationale,
            root_node_id=self.diag.root_node_id,
            mode=self.mode,
            exploration=list(self.ex.calls),
            calls=len(self.ex.calls),
            base_text=before,
            new_text=after,
            diff=unified_diff(target, before, after) if op != Operation.NO_ACTION else "",
        )

    def _no_action(
        self,
        classification: Classification,
        rationale: str,
        confidence: float,
        dims: Dimensions | None = None,
    ) -> Recommendation:
        return self._rec(
            Operation.NO_ACTION,
            None,
            before=None,
            after=None,
            change="",
            classification=classification,
            confidence=confidence,
            rationale=rationale,
            dims=dims or Dimensions(),
        )

    def _user_source(self) -> str:
        turn = self.delta.anchor_node_id
        return f"user correction (session {self.conv.session_id}, node {turn})"

    def _current(self, path: str) -> str | None:
        """The file as it is now (for the diff; not an exploration call)."""
        return self.ws.read(path) if self.ws.exists(path) else None

    # --- system prompt --------------------------------------------------------------------
    def _system_prompt(self) -> Recommendation:
        instruction = (self.delta.instruction or self.delta.expected or "").strip()
        # A rule of one content word ("Do not say yes.", from "why did you say yes?") names no
        # subject: it cannot be matched against the prompt's lines, and is tied to the question.
        weak = len(term_set(instruction, drop=())) < MIN_RULE_TERMS
        if weak and instruction and self.question:
            instruction = f'{instruction.rstrip(".")} when asked "{quote(self.question)}"'
        path = self.ws.system_prompt_path
        if self.explore:
            prompt = self.ex.read_system_prompt()
            skills = self.ex.list_skills()
            hits = self.ex.search_kb(instruction, k=3)
        else:
            prompt = (
                self.root.output
                if self.root is not None and self.root.type == NodeType.SYSTEM_PROMPT
                else None
            )
            skills, hits = [], []
        current = self._current(path)
        instr_terms = term_set(instruction) - _DROP
        present = prompt is not None and not weak and _states(prompt, instruction)
        covering_skill = next(
            (
                s["path"]
                for s in skills
                if coverage(instr_terms, term_set(s["name"] + " " + s["description"])) >= INSTRUCTION_PRESENT
            ),
            None,
        )
        backing = next((h for h in hits if _states(h.content, instruction)), None)
        dims = Dimensions(
            existence=Dimension(
                ok=present,
                evidence="the instruction is in the system prompt"
                if present
                else "no such instruction in the system prompt",
            ),
            accessibility=Dimension(ok=None, evidence="the system prompt is always in context"),
            correctness=Dimension(ok=present, evidence=quote(instruction)),
            consistency=Dimension(
                ok=covering_skill is None,
                evidence=f"skill {covering_skill} covers the same behaviour"
                if covering_skill
                else "no skill or entry contradicts it",
            ),
        )
        if present:
            return self._no_action(
                Classification.INCIDENTAL,
                "the system prompt already states this; the agent did not follow it",
                0.6,
                dims,
            )
        if current is None and prompt is None:
            return self._no_action(
                Classification.AMBIGUOUS, "the workspace has no system prompt to update", 0.3, dims
            )
        base = current if current is not None else prompt
        after = append_line(base or "", f"- {instruction}")
        return self._rec(
            Operation.UPDATE,
            path,
            before=base,
            after=after,
            change=f"- {instruction}",
            classification=Classification.SYSTEMIC,
            confidence=0.85 if backing else 0.75,
            rationale="behavioural correction the system prompt does not cover: add the rule",
            dims=dims,
            authority=backing.path if backing else self._user_source(),
            rule="status" if backing else None,
        )

    # --- tool prompt ----------------------------------------------------------------------
    def _tool(self) -> Recommendation:
        path = self.diag.component_path or ""
        # The tool's own name (a tools file of the user's layout can describe several tools).
        root_tool = self.root.name if self.root is not None and self.root.type == NodeType.TOOL_CALL else None
        name = root_tool or (PurePosixPath(path).stem if path else "")
        got, expected = self.delta.got, self.delta.expected
        if self.explore:
            text = self.ex.read_tool_prompt(name)
            prompt = self.ex.read_system_prompt()
            hits = self.ex.search_kb(f"{name.replace('_', ' ')} {expected or ''}", k=3)
        else:
            text, prompt, hits = None, None, []
        current = self._current(path) if path else None
        base = text if text is not None else current
        if (
            got is None
            and (expected is None or not contains(base or "", expected))
            and base is not None
            and self.delta.anchor_node_id
        ):
            # the error names only the required argument the call left out (the delta may already
            # carry it as the expected value): the call sent it under the name the description
            # gives for it
            failed = self.conv.node(self.delta.anchor_node_id)
            if failed is not None and failed.output:
                renamed, sent = renamed_argument(failed.output, failed.content or "", base)
                if sent is not None and (expected is None or renamed == expected):
                    expected, got = renamed, sent
        if (
            self.explore
            and base is not None
            and got
            and contains(base, got)
            and (not expected or contains(base, expected))
        ):
            # The error names no single expected value the description lacks: take the one value the
            # error lists as acceptable that the description never mentions (the one `got` replaced).
            anchor = self.conv.node(self.delta.anchor_node_id) if self.delta.anchor_node_id else None
            missing = [
                a
                for a in allowed_values(anchor.output if anchor else "")
                if a != got and not contains(base, a)
            ]
            if len(missing) == 1:
                expected = missing[0]
        also = [
            p
            for p, t in ((self.ws.system_prompt_path, prompt), *((h.path, h.content) for h in hits))
            if t and got and contains(t, got)
        ]
        dims = Dimensions(
            existence=Dimension(
                ok=base is not None, evidence=f"tool prompt {path}" if base else f"no tool prompt {path}"
            ),
            accessibility=Dimension(ok=None, evidence="tool descriptions are always in context"),
            correctness=Dimension(
                ok=not (got and base and contains(base, got)) if self.explore else None,
                evidence=f"the tool prompt documents {got!r}; the tool expects {expected!r}",
            ),
            consistency=Dimension(
                ok=not also,
                evidence=("also stated in " + ", ".join(also)) if also else "no other source repeats it",
            ),
        )
        if self.explore and base is not None and got and contains(base, got) and expected:
            after = replace_value(base, got, expected, set())
            return self._rec(
                Operation.UPDATE,
                path,
                before=base,
                after=after,
                change=f"replace {got!r} with {expected!r}",
                classification=Classification.SYSTEMIC,
                confidence=0.85,
                rationale="the tool description tells the agent to send a value the tool rejects",
                dims=dims,
                authority=f"tool error at node {self.delta.anchor_node_id}",
                rule=None,
            )
        if self.explore and base is not None and expected and contains(base, expected):
            return self._no_action(
                Classification.INCIDENTAL, "the tool prompt already documents the expected value", 0.6, dims
            )
        if not self.explore and current is not None and got and expected:
            return self._rec(
                Operation.UPDATE,
                path,
                before=current,
                after=replace_value(current, got, expected, set()),
                change=f"replace {got!r} with {expected!r}",
                classification=Classification.SYSTEMIC,
                confidence=0.6,
                rationale="the failing call followed the tool description (not verified: passive)",
                dims=dims,
                authority=f"tool error at node {self.delta.anchor_node_id}",
            )
        return self._no_action(
            Classification.AMBIGUOUS, "the tool error does not point at the tool description", 0.4, dims
        )

    # --- skill ----------------------------------------------------------------------------
    def _skill(self) -> Recommendation:
        path = self.diag.component_path or (self.root.source if self.root else None) or ""
        got, expected = self.delta.got, self.delta.expected
        if self.explore:
            text = self.ex.read_skill(path)
            skills = self.ex.list_skills()
            hits = self.ex.search_kb(self._query(), k=3)
        else:
            text = self.root.output if self.root is not None else None
            skills, hits = [], []
        base = self._current(path) if path else None
        text = text if text is not None else base
        backing = [
            h
            for h in hits
            if expected and contains(h.content, expected) and self._about_user(h.content, expected)
        ]
        others = [
            s["path"]
            for s in skills
            if s["path"] != path
            and coverage(self.subject, term_set(s["name"] + " " + s["description"])) >= 0.5
        ]
        wrong = bool(text and got and contains(text, got))
        dims = Dimensions(
            existence=Dimension(
                ok=bool(backing) or bool(text and expected and contains(text, expected)),
                evidence=_paths(backing, "states the expected value"),
            ),
            accessibility=Dimension(ok=True, evidence=f"the agent read {path}"),
            correctness=Dimension(
                ok=not wrong,
                evidence=f"{path} states {got!r}" if wrong else "the skill does not state the wrong value",
            ),
            consistency=Dimension(
                ok=not (backing and wrong) and not others,
                evidence=("conflicts with " + ", ".join([b.path for b in backing] + others))
                if (backing and wrong) or others
                else "no conflicting source",
            ),
        )
        if wrong and expected and base is not None:
            decision = (
                self._authority([self._meta(path, base)] + [self._entry_meta(b.path) for b in backing])
                if backing
                else None
            )
            authority = decision.winner if decision and decision.winner != path else self._user_source()
            return self._rec(
                Operation.UPDATE,
                path,
                before=base,
                after=replace_value(base, got or "", expected, self.subject),
                change=f"replace {got!r} with {expected!r}",
                classification=Classification.SYSTEMIC,
                confidence=0.9 if decision and decision.winner != path else 0.7,
                rationale="the skill states an outdated value",
                dims=dims,
                authority=authority,
                rule=decision.rule if decision and decision.winner != path else None,
            )
        if text and expected and contains(text, expected):
            return self._no_action(
                Classification.INCIDENTAL, "the skill already states the expected value", 0.6, dims
            )
        return self._no_action(
            Classification.AMBIGUOUS, "the skill neither states the wrong nor the right value", 0.4, dims
        )

    # --- knowledge base -------------------------------------------------------------------
    def _query(self) -> str:
        # What the user says the value is for ("the X is <value>") names the page better than the
        # question whose wording led the search astray.
        parts = [subject_phrase(self.subject_text)]
        if self.delta.expected:
            parts.append(self.delta.expected)
        return " ".join(p for p in parts if p)

    def _knowledge(self) -> Recommendation:
        got, expected = self.delta.got, self.delta.expected
        r_path = (
            self.diag.component_path if self.ws.component_type(self.diag.component_path) == "kb" else None
        )
        if self.explore:
            r_text = self.ex.read_kb_entry(r_path) if r_path else None
            hits = self.ex.search_kb(self._query(), k=5)
            r_wrong = bool(r_text and got and contains(r_text, got))
            cands = [
                h.path
                for h in hits
                if h.path != r_path
                and expected
                and contains(h.content, expected)
                and (
                    self._about_user(h.content, expected)
                    or (r_wrong and self._near_identical(r_text or "", got or "", h.content, expected))
                )
            ]
            if not cands and expected:
                # The user's own value, stated by one entry only, in a sentence that shares half of
                # what they call the thing ("order cakes 3 days before" for "the cake order notice"):
                # that entry is where the answer was.
                # An entry the agent was shown for the question and reported nothing from is,
                # on a partial match alone, about something else ("the yearly fee" page, shown
                # for "the lost-key fee", stating the same amount by chance).
                shown = self._shown_and_passed_over()
                # A page the failing question's own search returned is about the question already:
                # one of the user's words for the thing in its sentence, title or index words
                # suffices ("Renewing your loans ... renewed up to 5 times" for "the renewal limit").
                returned_here = (
                    {d.path for d in self.root.documents if d.path} if self.root is not None else set()
                )
                # So does an exact figure (a clock time, an amount, a date) the user gives that one
                # page alone of those found for their words states: it seldom recurs by chance.
                exact = value_kind(expected) in _EXACT_KINDS
                stating = [
                    h.path
                    for h in hits
                    if h.path != r_path
                    and h.path not in shown
                    and contains(h.content, expected)
                    and (
                        self._partly_about(h.content, expected, least=1 if h.path in returned_here else 2)
                        # (the word in the sentence that states the figure: one shared with the
                        # page's title only may name another thing the page prices, "Pay as you
                        # ride" for "the overtime charge on my ride allowance")
                        or (
                            exact
                            and self._partly_about(h.content, expected, least=1, half=False, titled=False)
                        )
                    )
                ]
                cands = stating if len(stating) == 1 else []
            for p in cands[:2]:
                self.ex.read_kb_entry(p)
            section_hits = [h.path for h in hits]
        else:
            r_text = self._root_document(r_path)
            cands = []
            section_hits = [d.path for d in (self.root.documents if self.root else []) if d.path]
        wrong = bool(r_text and got and contains(r_text, got))
        right = bool(r_text and expected and contains(r_text, expected))
        # the user says the answer was about something else: the retrieved entry's value is no
        # rival claim about what they asked
        misread = self._answer_misread()
        # A retrieved page titled only with the user's words is about what they asked; a page whose
        # title names something they never mentioned ("Family plan" beside "Student plan" for "the
        # student plan price") states the value of a sibling thing, not a rival claim.
        r_fits = bool(r_text) and self._title_fits(r_text or "")
        conflicts = [
            c
            for c in cands
            if wrong
            and not misread
            and not (
                r_fits and self._sibling(self.ws.read(c), expected or "") and not self._related(r_path, c)
            )
            and self._same_claim(r_text or "", got or "", self.ws.read(c), expected or "")
        ]
        dims = Dimensions(
            existence=Dimension(
                ok=bool(cands) or right,
                evidence=_paths_str(cands, "states the expected value")
                if cands
                else ("the retrieved entry states it" if right else "no source states the expected value"),
            ),
            accessibility=Dimension(
                ok=(not cands or any(c in self.retrieved for c in cands)) if (cands or right) else None,
                evidence=(
                    "never retrieved in the session: "
                    + ", ".join(c for c in cands if c not in self.retrieved)
                )
                if cands
                else "",
            ),
            correctness=Dimension(
                ok=not wrong if r_text else None, evidence=f"{r_path} states {got!r}" if wrong else ""
            ),
            consistency=Dimension(
                ok=not conflicts,
                evidence=("conflicts with " + ", ".join(conflicts)) if conflicts else "no conflicting entry",
            ),
        )
        if wrong and r_path:
            if conflicts:
                return self._resolve_conflict(r_path, conflicts, dims)
            # The faulty entry is about what the user asked: it is stale. Otherwise the search
            # brought the wrong entry, and the one stating the expected value is not reachable.
            off_topic = (
                misread
                or value_kind(got or "") != value_kind(expected or "")
                or not self._about_user(r_text or "", got or "")
            )
            if cands and off_topic:
                if any(c in self.retrieved for c in cands):
                    return self._no_action(
                        Classification.INCIDENTAL,
                        "the right entry was retrieved; the agent did not use it",
                        0.55,
                        dims,
                    )
                return self._make_accessible(cands[0], dims)
            base = self._current(r_path)
            if base is None:
                return self._no_action(
                    Classification.AMBIGUOUS, f"{r_path} is no longer in the workspace", 0.3, dims
                )
            return self._rec(
                Operation.UPDATE,
                r_path,
                before=base,
                after=replace_value(base, got or "", expected or "", self.subject),
                change=f"replace {got!r} with {expected!r}",
                classification=Classification.SYSTEMIC,
                confidence=0.7,
                rationale="the entry states an outdated value and no other source states the current one",
                dims=dims,
                authority=self._user_source(),
            )
        returned = {d.path for d in self.root.documents} if self.root is not None else set()
        if right and r_path is not None and r_path in returned and r_path not in self.retrieved:
            # the search returned the right entry but ranked another above it, and the agent used
            # that one: the entry is not found first for the question's wording
            return self._make_accessible(r_path, dims)
        if right:
            return self._no_action(
                Classification.INCIDENTAL, "the retrieved entry already states the expected value", 0.6, dims
            )
        if cands:
            if any(c in self.retrieved for c in cands):
                return self._no_action(
                    Classification.INCIDENTAL,
                    "the right entry was retrieved; the agent did not use it",
                    0.55,
                    dims,
                )
            return self._make_accessible(cands[0], dims)
        if expected:
            return self._create(section_hits, dims)
        return self._no_action(Classification.AMBIGUOUS, "no expected content to add", 0.3, dims)

    def _root_document(self, path: str | None) -> str | None:
        if self.root is None:
            return None
        for d in self.root.documents:
            if d.path == path:
                return d.content
        return self.root.output or None

    def _about_user(self, text: str, value: str) -> bool:
        """Whether the sentence stating ``value`` is about what the user asked or said."""
        sent = claim_sentence(_prose(text), value)
        if sent is None:
            return False
        meta, body = read_page(text)
        # A page without front matter is titled by its first heading.
        title = page_title(meta, body) or ""
        # A page titled only with words of what the user talks about is about it, however its
        # sentence words the rest ("the X allowance on Y" against a page titled "X on Y").
        title_terms = term_set(title) - _DROP
        if title_terms and _word_keys(title_terms) <= _word_keys(self.subject):
            return True
        if relevance(self.subject_text, sent, title) >= RELEVANT:
            return True
        # Three or more of the user's words for the thing, in another order ("a permit decision on
        # the request" for "the permit request decision date"), name it as well.
        shared = self.subject & (term_set(sent) | title_terms)
        if len(shared) >= 3 and len(shared) * 4 >= len(self.subject) * 3:
            return True
        # The page's own index words ("tags: [upload, file size]") name what it is about when its
        # sentence words it otherwise ("each file can be at most 10 MB" for "the upload size limit").
        labels = term_set(" ".join(_labels(meta))) - _DROP
        return len(self.subject & labels) >= 2 and len(self.subject & labels) * 2 >= len(self.subject)

    def _related(self, a: str | None, b: str) -> bool:
        """Whether two entries are copies of one page (linked by supersession, or titled alike)."""
        try:
            ea, eb = self.ws.kb_entry(a or ""), self.ws.kb_entry(b)
        except KeyError:
            return False
        return _duplicates(ea, eb) or _duplicates(eb, ea)

    def _sibling(self, text: str, value: str) -> bool:
        """Whether the page states ``value`` of a thing its title names and the user did not: the
        clause stating it carries a title word outside what the user asked about ("the Family pass
        costs £35" for "the student pass price"; not "Effective 1 May: the pass costs £35" on a
        page titled "Price update")."""
        sent = claim_sentence(_prose(text), value)
        if not sent:
            return False
        extra = _word_keys(_title_words(text)) - _word_keys(self.subject)
        return bool(extra & _word_keys(term_set(_value_clause(sent, value))))

    def _title_fits(self, text: str) -> bool:
        """Whether the page's title is words of what the user asked about only (its numbers aside:
        a year, an edition, an age band are values, not the user's words for the thing)."""
        title_terms = _word_keys(_title_words(text))
        return bool(title_terms) and title_terms <= _word_keys(self.subject)

    def _answer_misread(self) -> bool:
        """Whether the user's reply says the answer was about something other than what they asked."""
        anchor = self.conv.node(self.delta.anchor_node_id) if self.delta.anchor_node_id else None
        return bool(
            anchor is not None
            and anchor.type == NodeType.USER
            and MISREAD_PATTERN.search(anchor.content or "")
        )

    def _shown_and_passed_over(self) -> set[str]:
        """The documents of the root retrieval when the answer it led to reported finding nothing."""
        if self.root is None or self.root.type != NodeType.KB_RETRIEVAL:
            return set()
        target = self.delta.target_node_id
        answer = self.conv.node(target).content if target else ""
        if not answer or not reports_absence(answer):
            return set()
        return {d.path for d in self.root.documents if d.path}

    def _partly_about(
        self, text: str, value: str, least: int = 2, half: bool = True, titled: bool = True
    ) -> bool:
        """Whether the sentence stating ``value``, with (``titled``) its page's title and index
        words, shares ``least`` or more and (``half``) at least half of the user's words for what
        they asked about."""
        sent = claim_sentence(_prose(text), value)
        if sent is None:
            return False
        meta, body = read_page(text)
        title = (page_title(meta, body) or "") if titled else ""
        labels = " ".join(_labels(meta)) if titled else ""
        words = _word_keys(term_set(f"{sent} {title} {labels}"))
        shared = _word_keys(self.subject) & words
        return len(shared) >= least and (not half or len(shared) * 2 >= len(_word_keys(self.subject)))

    def _same_claim(self, r_text: str, got: str, x_text: str, expected: str) -> bool:
        """Whether two entries state different values for the same thing: values of one kind, and
        both sentences about what the user asked or near-identical but for the value."""
        if value_kind(got) != value_kind(expected):
            return False
        if self._about_user(r_text, got) and self._about_user(x_text, expected):
            return True
        return self._near_identical(r_text, got, x_text, expected)

    def _near_identical(self, r_text: str, got: str, x_text: str, expected: str) -> bool:
        """The sentence stating ``got`` and the one stating ``expected`` differ (almost) only in the value."""
        if value_kind(got) != value_kind(expected):
            return False
        a, b = claim_sentence(_prose(r_text), got), claim_sentence(_prose(x_text), expected)
        if not a or not b:
            return False
        if jaccard(_sentence_terms(a) - _DROP, _sentence_terms(b) - _DROP) >= SAME_CLAIM:
            return True
        # one page may run the claim on into more ("up to 35 tonnes displacement; heavier boats
        # ..."): the clauses that state the values are the claim
        ca, cb = _value_clause(a, got), _value_clause(b, expected)
        return jaccard(_sentence_terms(ca) - _DROP, _sentence_terms(cb) - _DROP) >= SAME_CLAIM

    def _meta(self, path: str, text: str) -> SourceInfo:
        meta, _ = read_page(text)
        return SourceInfo.from_metadata(path, meta)

    def _entry_meta(self, path: str) -> SourceInfo:
        return self._meta(path, self.ws.read(path))

    def _authority(self, sources: list[SourceInfo]) -> AuthorityDecision:
        return resolve_authority(sources)

    def _resolve_conflict(self, r_path: str, conflicts: list[str], dims: Dimensions) -> Recommendation:
        got, expected = self.delta.got or "", self.delta.expected or ""
        decision = self._authority([self._entry_meta(r_path)] + [self._entry_meta(c) for c in conflicts])
        base = self.ws.read(r_path)
        if decision.winner == r_path:
            return self._no_action(
                Classification.AMBIGUOUS,
                f"{r_path} outranks the sources that agree with the user ({decision.rule}); needs a human",
                0.4,
                dims,
            )
        winner = decision.winner
        r_entry, w_entry = self.ws.kb_entry(r_path), self.ws.kb_entry(winner)
        if _duplicates(r_entry, w_entry):
            return self._rec(
                Operation.DELETE,
                r_path,
                before=base,
                after=None,
                change=f"delete {r_path}: superseded by {winner}",
                classification=Classification.SYSTEMIC,
                confidence=_DELETE_CONFIDENCE.get(decision.rule, 0.7),
                rationale=f"{r_path} duplicates {winner} with an outdated value; {winner} is authoritative ({decision.rule})",
                dims=dims,
                authority=winner,
                rule=decision.rule,
            )
        return self._rec(
            Operation.UPDATE,
            r_path,
            before=base,
            after=replace_value(base, got, expected, self.subject),
            change=f"replace {got!r} with {expected!r}",
            classification=Classification.SYSTEMIC,
            confidence=0.9,
            rationale=f"{winner} states the current value and is authoritative ({decision.rule})",
            dims=dims,
            authority=winner,
            rule=decision.rule,
        )

    def _make_accessible(self, path: str, dims: Dimensions) -> Recommendation:
        base = self.ws.read(path)
        line = f'Related question: "{self.question.strip()}"' if self.question.strip() else ""
        return self._rec(
            Operation.UPDATE,
            path,
            before=base,
            after=append_line(base, line),
            change=line,
            classification=Classification.SYSTEMIC,
            confidence=0.75,
            rationale=f"{path} holds the right content but the question's wording does not retrieve it",
            dims=dims,
            authority=path,
            rule="only",
        )

    def _subject_name(self) -> str:
        """What the missing entry is about: the subject the user states ("the X is <value>"), else
        what the agent said it could not find ("nothing about the X"), else the question's subject."""
        claimed = claimed_subject(self.correction, self.delta.expected)
        if claimed:
            return claimed
        target = self.conv.node(self.delta.target_node_id) if self.delta.target_node_id else None
        if target is not None and target.type == NodeType.AGENT:
            m = re.search(
                # the noun phrase ends where a prepositional or relative clause begins
                # ("nothing about the X that I can find", "the X in our notes")
                r"\b(?:about|on|for|regarding) the ([a-z][\w -]{2,60}?)"
                r"(?: (?:in|from|that|which|who|where|I|we|you)\b|[.,;!?]|$)",
                target.content,
                re.IGNORECASE,
            )
            if m:
                return m.group(1).strip()
        return subject_phrase(self.question) or " ".join(sorted(self.subject)) or "new entry"

    def _named_section(self, phrase: str) -> str | None:
        """The one knowledge-base folder whose own name is about the new entry's subject (a
        ``printing/`` folder for "colour printing cost"): folders are named by content."""
        subject = {stem(t) for t in content_tokens(f"{phrase} {self.question}", drop=QUESTION_WORDS)}
        folders = sorted({str(PurePosixPath(e.path).parent) for e in self.ws.kb_entries()})
        named = [
            f
            for f in folders
            if f != "."
            and share_stem(
                {stem(t) for t in content_tokens(PurePosixPath(f).name.replace("-", " ").replace("_", " "))},
                subject,
            )
        ]
        return named[0] if len(named) == 1 else None

    def _create(self, section_hits: list[str], dims: Dimensions) -> Recommendation:
        phrase = self._subject_name()
        if self.explore:
            section_hits = [h.path for h in self.ex.search_kb(phrase, k=3)] or section_hits
        dirs = [str(PurePosixPath(p).parent) for p in section_hits if p and self.ws.component_type(p) == "kb"]
        section = self._named_section(phrase) or (
            max(dirs, key=lambda d: (dirs.count(d), -dirs.index(d))) if dirs else self.ws.kb_root()
        )
        slug = slugify(phrase)
        # New pages take the suffix of the section's pages (a user's layout may declare .txt pages).
        suffixes = [
            PurePosixPath(p).suffix for p in section_hits if p and str(PurePosixPath(p).parent) == section
        ]
        suffix = suffixes[0] if suffixes else ".md"
        path = f"{section}/{slug}{suffix}"
        if self.ws.exists(path):
            path = f"{section}/{slug}-2{suffix}"
        title = phrase[:1].upper() + phrase[1:]
        quote_line = quote(self.correction, 200).replace('"', "'")
        text = (
            f"---\nid: {slug}\ntitle: {title}\nstatus: draft\nauthor: causal-mw context recommend\n"
            f"source: session {self.conv.session_id}\n---\n# {title}\n\n{title}: {self.delta.expected}.\n\n"
            f'Source: user correction in session {self.conv.session_id}: "{quote_line}"\n'
        )
        return self._rec(
            Operation.CREATE,
            path,
            before=None,
            after=text,
            change=f"{title}: {self.delta.expected}.",
            classification=Classification.SYSTEMIC,
            confidence=0.7,
            rationale="no source in the workspace states this; add an entry (draft, for review)",
            dims=dims,
            authority=self._user_source(),
        )


# Front-matter keys that list a page's index words, whatever the workspace calls them: by the
# words of the key's name ("tags", "label_names", "searchKeywords"; not "tag_ids").
_LABEL_WORDS = frozenset(
    {"keyword", "keywords", "tag", "tags", "label", "labels", "topic", "topics", "aliases", "synonyms"}
)
_KEY_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")


# Values given as an exact figure, not a count or a span that many pages share ("10 days").
_EXACT_KINDS = ("time", "money", "percent", "date", "size", "measure", "dimensions")


def _labels(meta: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for key, value in meta.items():
        words = [w.lower() for w in _KEY_WORD.findall(str(key))]
        if not value or {"id", "ids"} & set(words):
            continue
        if _LABEL_WORDS & set(words) or words == ["search", "terms"]:
            out += [str(v) for v in value] if isinstance(value, list) else [str(value)]
    return out


def _word_keys(terms: set[str]) -> set[str]:
    """Stems compared as one word's forms: a silent final "e" aside ("charge", "charg" from
    "charges") and a noun made with "-al" from its verb ("renewal" with "renew", "arrival" with
    "arrive")."""
    out = set()
    for t in terms:
        if len(t) >= 7 and t.endswith("al"):
            t = t[:-2]
        elif len(t) >= 9 and t.endswith("ation"):
            # a noun made with "-ation" from its verb ("cancellation" with "cancel", "reservation"
            # with "reserve"), a doubled final consonant undone
            t = t[:-5]
            t = t[:-1] if len(t) >= 4 and t[-1] == t[-2] else t
        out.add(t.rstrip("e"))
    return out


def _sentence_terms(sentence: str) -> set[str]:
    values = " ".join(v for _, v in find_values(sentence))
    return term_set(sentence) - term_set(values)


def _title_words(text: str) -> set[str]:
    """The content words of a page's title, its numbers aside."""
    meta, body = read_page(text)
    return {t for t in term_set(page_title(meta, body) or "") - _DROP if not t.isdigit()}


def _prose(text: str) -> str:
    """What a page says, for finding the sentence that states a value: the file itself, but the
    body alone when the page's fields are not YAML front matter (a JSON article's fields and HTML,
    TOML front matter); markup in a page's text (an HTML body under YAML front matter) is read as the
    text it shows, one line per block, so a sentence ends where its paragraph or list item does."""
    meta, body = read_page(text)
    return body if meta and not text.startswith("---") else html_text(text)


def _duplicates(a: KBEntry, b: KBEntry) -> bool:
    """Whether the stale entry ``a`` is a copy of the authoritative ``b`` (then ``a`` goes): linked by
    supersession, or titled as ``b`` is, years aside. A ``b`` whose title says more than ``a``'s
    ("X update, January 2025" beside "X") is a notice about ``a``'s subject, not a copy: ``a`` stays
    the page for it and is corrected."""
    linked = bool({a.id, a.path} & set(b.supersedes)) or b.id == a.superseded_by or b.path == a.superseded_by
    title_a = term_set(re.sub(r"\d+", " ", a.title))
    title_b = term_set(re.sub(r"\d+", " ", b.title))
    return linked or (title_b <= title_a and jaccard(title_a, title_b) >= DUPLICATE_TITLE)


def _states(text: str, instruction: str) -> bool:
    """Whether one line of ``text`` states the instruction (most of its words, some side by side)."""
    return any(
        relevance(instruction, line, drop=()) >= INSTRUCTION_PRESENT
        for line in text.splitlines()
        if line.strip()
    )


_CLAUSE_BREAK = re.compile(r"[;:,()]|\s[-\u2013\u2014]\s")


def _value_clause(sentence: str, value: str) -> str:
    """The clause of ``sentence`` that states ``value`` (the sentence if none alone does)."""
    needle = normalize(value)
    return next((c for c in _CLAUSE_BREAK.split(sentence) if needle and needle in normalize(c)), sentence)


def _paths(hits: list[Any], what: str) -> str:
    return _paths_str([h.path for h in hits], what)


def _paths_str(paths: list[str], what: str) -> str:
    return f"{', '.join(paths)} {what}" if paths else ""
