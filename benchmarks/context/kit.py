"""Domain kits: a user's own domain as a labelled evaluation set, described in one YAML file.

A kit names a workspace (a folder, with its ``causal-context.yaml`` when it has its own layout, or
files written inline) and a few session templates over it:

* ``facts``: a value stated in one workspace file (a knowledge-base page or a skill), the
  questions that need it, the value that goes stale and how the user corrects the agent;
* ``tools``: a tool whose description documents a literal (a parameter name or an allowed value)
  the tool rejects when it is wrong, with a request, the call's arguments and the error;
* ``rules``: a line of the system prompt the agent breaks when it is missing.

:func:`generate_kit_benchmark` plants one fault per session in a copy of the workspace (the
value replaced by a stale one, optionally announced by a newer page or duplicated by an older
deprecated one; a page removed; an alias question the search routes to another page; a tool
description documenting the wrong literal; a rule dropped from the prompt) and writes a session
against the faulty copy with the simulation's session builder, so every tool output is the
file's exact text and knowledge-base results come from a real search. The result is a
:class:`~benchmarks.context.simulation.Benchmark` (with the layout), verified by the same
five checks and scored by ``causal-mw bench context --kit FILE`` with the same tables.

Nothing here knows any domain: all wording comes from the kit or from the generic defaults of
:class:`KitPhrasing`. See ``docs/context.md`` ("Your own domain: a kit") and
``examples/travel_kit/``.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from benchmarks.context.simulation.generator import (
    _POST_CONTROL,
    _POST_DISSATISFIED,
    GenerationError,
    _plans,
)
from benchmarks.context.simulation.render import front
from benchmarks.context.simulation.schema import (
    TIERS,
    Benchmark,
    ExpectedFix,
    FaultSpec,
    GroundTruth,
    SimTrace,
)
from benchmarks.context.simulation.session import SessionBuilder
from causal_middleware.context.conversation import Conversation, ConversationNode, NodeType
from causal_middleware.context.dates import change_date
from causal_middleware.context.recommendation import Operation
from causal_middleware.context.root_cause import CATEGORY_COMPONENT, FaultCategory
from causal_middleware.context.workspace import (
    CONFIG_NAMES,
    Workspace,
    WorkspaceLayout,
    split_front_matter,
)

CATEGORY_ORDER = (
    FaultCategory.KB_CONTENT_STALE,
    FaultCategory.KB_CONTENT_GAP,
    FaultCategory.RETRIEVAL_FAILURE,
    FaultCategory.SKILL_FILE_STALE,
    FaultCategory.TOOL_PROMPT_ERROR,
    FaultCategory.SYSTEM_PROMPT_GAP,
)
STALE_VARIANTS = ("update", "announcement", "duplicate")
KB_FAULTS = (*STALE_VARIANTS, "gap")


class KitError(ValueError):
    """A kit file that cannot be used, with the reason and the template it concerns."""


def _fill(template: str, **values: str) -> str:
    """``{name}`` placeholders replaced (only those given; other braces, e.g. JSON, are kept)."""
    out = template
    for key, value in values.items():
        out = out.replace("{" + key + "}", value)
    return out


# --- the kit file ---------------------------------------------------------------------------------


class KitWorkspace(BaseModel):
    """Where the workspace is: ``path`` (a folder, relative to the kit file) with an optional
    ``config`` (its ``causal-context.yaml``; default: the one in the folder, if any), or ``files``
    written inline (``{path: text}``; a ``causal-context.yaml`` among them declares the layout)."""

    model_config = ConfigDict(extra="forbid")  # a misspelt key is an error, not ignored

    path: str | None = None
    config: str | None = None
    files: dict[str, str] | None = None

    @model_validator(mode="after")
    def _one(self) -> KitWorkspace:
        if (self.path is None) == (self.files is None):
            raise ValueError("workspace: give either 'path' (a folder) or 'files' (inline), not both")
        if self.config is not None and self.files is not None:
            raise ValueError("workspace: 'config' goes with 'path'; put causal-context.yaml among 'files'")
        return self


class FactTemplate(BaseModel):
    """A value stated in one file of the workspace (a knowledge-base page or a skill)."""

    model_config = ConfigDict(extra="forbid")  # a misspelt key is an error, not ignored

    component: str = Field(description="the workspace file that states the value")
    right: str = Field(description="the value as the file states it now")
    stale: list[str] = Field(min_length=1, description="outdated values the file may carry instead")
    questions: list[str] = Field(min_length=1, description="user questions the value answers")
    corrections: list[str] = Field(
        default_factory=list,
        description="how the user corrects a stale answer: {right} (required), {stale}, {subject}",
    )
    gap_corrections: list[str] = Field(
        default_factory=list, description="how the user supplies the value when the agent finds none"
    )
    subject: str | None = Field(default=None, description="noun phrase, e.g. 'checked bag allowance'")
    claim: str | None = Field(
        default=None,
        description="the sentence stating the value, with {value}; default: found in the file",
    )
    alias_questions: list[str] = Field(
        default_factory=list, description="wordings the search may route to another page"
    )
    faults: list[str] | None = Field(
        default=None,
        description="fault variants of a knowledge-base page: update, announcement, duplicate, gap "
        "(default: all); a skill has update only",
    )

    @model_validator(mode="after")
    def _check(self) -> FactTemplate:
        for c in self.corrections + self.gap_corrections:
            if "{right}" not in c:
                raise ValueError(
                    f"fact {self.component}: correction {c!r} must contain {{right}} (the session has to "
                    "state the right value, or the expected fix cannot be derived from it)"
                )
        if self.claim is not None and "{value}" not in self.claim:
            raise ValueError(f"fact {self.component}: claim must contain {{value}}")
        unknown = sorted(set(self.faults or ()) - set(KB_FAULTS))
        if unknown:
            raise ValueError(f"fact {self.component}: unknown fault(s) {unknown}; known: {list(KB_FAULTS)}")
        return self


class ToolTemplate(BaseModel):
    """A tool whose description documents a literal the tool rejects when it is wrong."""

    model_config = ConfigDict(extra="forbid")  # a misspelt key is an error, not ignored

    tool: str = Field(description="the tool's name, as the workspace describes it")
    right: str = Field(description="the literal its description states now")
    wrong: list[str] = Field(min_length=1, description="wrong literals the description may carry")
    requests: list[str] = Field(min_length=1, description="user requests that make the agent call it")
    args: dict[str, str] = Field(description="call arguments; '{literal}' (a name or a value) is filled in")
    error: str = Field(description="the tool's error for a wrong literal: {wrong} and {right}")
    success: str = Field(default="OK", description="the tool's output on success")
    done_reply: str = Field(default="Done.", description="the agent's reply after success")
    complaints: list[str] = Field(default_factory=list, description="how the user reacts to the failure")

    @model_validator(mode="after")
    def _check(self) -> ToolTemplate:
        if "{literal}" not in self.args and "{literal}" not in self.args.values():
            raise ValueError(f"tool {self.tool}: one argument name or value must be '{{literal}}'")
        if "{right}" not in self.error:
            raise ValueError(f"tool {self.tool}: the error must name the right literal ({{right}})")
        return self


class RuleTemplate(BaseModel):
    """A rule of the system prompt the agent breaks when it is missing."""

    model_config = ConfigDict(extra="forbid")  # a misspelt key is an error, not ignored

    rule: str = Field(description="the rule as the prompt file states it (one line of it)")
    questions: list[str] = Field(min_length=1)
    bad_reply: str = Field(description="the agent's reply without the rule")
    good_reply: str = Field(description="the agent's reply with it")
    corrections: list[str] = Field(min_length=1, description="how the user points out the breach")


class KitPhrasing(BaseModel):
    """How the agent and users talk; generic defaults, each list may be replaced in the kit.
    Placeholders: {subject}, {right}, {stale}, {question}."""

    model_config = ConfigDict(extra="forbid")  # a misspelt key is an error, not ignored

    answer_prefixes: list[str] = Field(
        default_factory=lambda: ["", "Sure, ", "According to our documentation, "]
    )
    reasoning: list[str] = Field(
        default_factory=lambda: [
            "Let me look up the {subject}.",
            "Checking the knowledge base for the {subject}.",
        ]
    )
    stale_corrections: list[str] = Field(
        default_factory=lambda: [
            "That's not right, it's {right} now.",
            "It used to be {stale} but it's {right} now.",
            "I believe the {subject} is {right}, not {stale}.",
        ]
    )
    gap_corrections: list[str] = Field(
        default_factory=lambda: ["It is {right}.", "As far as I know the {subject} is {right}."]
    )
    rf_corrections: list[str] = Field(
        default_factory=lambda: [
            "That's not what I asked. The {subject} is {right}.",
            "You answered a different question; the {subject} is {right}.",
        ]
    )
    gap_replies: list[str] = Field(
        default_factory=lambda: [
            "I couldn't find anything about the {subject}.",
            "I don't have information on the {subject}.",
        ]
    )
    acknowledgements: list[str] = Field(
        default_factory=lambda: [
            "You're right, I apologize: the {subject} is {right}.",
            "Thanks for the correction, the {subject} is {right}.",
        ]
    )
    tool_complaints: list[str] = Field(
        default_factory=lambda: ["That didn't work.", "It failed again, please fix this."]
    )
    tool_failure_replies: list[str] = Field(
        default_factory=lambda: ["Sorry, that request didn't go through.", "The request failed."]
    )
    thanks: list[str] = Field(default_factory=lambda: ["Thanks!", "Great, thank you."])
    welcome: list[str] = Field(default_factory=lambda: ["You're welcome."])
    give_up: list[str] = Field(default_factory=lambda: ["Never mind.", "I'll ask someone else."])
    control_openers: list[str] = Field(
        default_factory=lambda: ["{question}", "Another question: {question}", "Also, {question}"]
    )


class Kit(BaseModel):
    """A domain kit (see the module docstring and ``docs/context.md``)."""

    model_config = ConfigDict(extra="forbid")  # a misspelt key is an error, not ignored

    name: str = Field(pattern=r"^[A-Za-z0-9][\w-]*$")
    description: str = ""
    written: str | None = Field(default=None, description="when the kit was written (for reports)")
    workspace: KitWorkspace
    facts: list[FactTemplate] = Field(default_factory=list)
    tools: list[ToolTemplate] = Field(default_factory=list)
    rules: list[RuleTemplate] = Field(default_factory=list)
    phrasing: KitPhrasing = Field(default_factory=KitPhrasing)
    base_dir: str | None = Field(default=None, description="where relative paths resolve (set on load)")

    @model_validator(mode="after")
    def _some(self) -> Kit:
        if not (self.facts or self.tools or self.rules):
            raise ValueError("a kit needs at least one template under facts, tools or rules")
        return self


def load_kit(path: str | Path) -> Kit:
    """Read and validate a kit file (errors name the file and the template)."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"kit file {str(p)!r} does not exist")
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise KitError(f"{p}: malformed YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise KitError(f"{p}: a kit is a mapping (name, workspace, facts, tools, rules)")
    data = {**data, "base_dir": str(p.resolve().parent)}
    try:
        return Kit.model_validate(data)
    except ValidationError as exc:
        raise KitError(f"{p}: {_first_problem(exc)}") from exc


def _first_problem(exc: ValidationError) -> str:
    """One line: where the first problem is and what it is (for an unknown key, the keys there are)."""
    errors = exc.errors()
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"])
    said = f"{where}: {first['msg']}"
    if first["type"] == "extra_forbidden":
        model: type[BaseModel] = Kit
        for part in first["loc"][:-1]:
            field = model.model_fields.get(str(part)) if isinstance(part, str) else None
            inner = getattr(field, "annotation", None) if field is not None else None
            inner = next(iter(getattr(inner, "__args__", ())), inner)
            if isinstance(inner, type) and issubclass(inner, BaseModel):
                model = inner
        said += f" (keys there: {', '.join(k for k in model.model_fields if k != 'base_dir')})"
    more = len(errors) - 1
    return said + (f"; and {more} more" if more else "")


# --- the kit against its workspace -----------------------------------------------------------------


@dataclass
class _Fact:
    t: FactTemplate
    kind: str  # "kb" | "skill"
    path: str
    subject: str
    claim: str  # the sentence with the right value, verbatim in the file
    skill_name: str = ""

    def claim_with(self, value: str) -> str:
        return self.claim.replace(self.t.right, value)


@dataclass
class _Tool:
    t: ToolTemplate
    path: str


@dataclass
class _Rule:
    t: RuleTemplate
    line: str  # the prompt line that states the rule


@dataclass
class _Resolved:
    kit: Kit
    ws: Workspace
    config_text: str | None
    config_name: str | None
    facts: list[_Fact]
    tools: list[_Tool]
    rules: list[_Rule]

    @property
    def kb_facts(self) -> list[_Fact]:
        return [f for f in self.facts if f.kind == "kb"]

    @property
    def skill_facts(self) -> list[_Fact]:
        return [f for f in self.facts if f.kind == "skill"]


def kit_workspace(kit: Kit) -> tuple[Workspace, str | None, str | None]:
    """``(workspace, config text, config file name)`` of the kit."""
    base = Path(kit.base_dir or ".")
    if kit.workspace.files is not None:
        with tempfile.TemporaryDirectory(prefix="causal-kit-") as tmp:
            Workspace.from_files(kit.workspace.files).write_to(tmp)
            ws = Workspace.from_dir(tmp)
            ws = Workspace.from_files(ws.files, layout=ws.layout)
        name = next((n for n in CONFIG_NAMES if n in kit.workspace.files), None)
        return ws, (kit.workspace.files[name] if name else None), name
    root = base / str(kit.workspace.path)
    if not root.is_dir():
        raise KitError(f"kit {kit.name!r}: workspace folder {str(root)!r} does not exist")
    config = base / kit.workspace.config if kit.workspace.config else None
    if config is None:
        found = [root / n for n in CONFIG_NAMES if (root / n).is_file()]
        config = found[0] if found else None
    ws = Workspace.from_dir(root, config=config)
    ws = Workspace.from_files(ws.files, layout=ws.layout)
    if config is None:
        return ws, None, None
    return ws, config.read_text(encoding="utf-8"), ws.layout.config_path or config.name


_LIST_MARK = re.compile(r"^\s*(?:#+\s*|[-*+]\s+|\d+[.)]\s+|>\s*)")


def _find_claim(text: str, value: str) -> str | None:
    """The sentence of ``text`` (front matter aside) that states ``value``, verbatim."""
    try:
        _, body = split_front_matter(text)
    except ValueError:
        body = text
    for line in body.splitlines():
        if value not in line:
            continue
        line = _LIST_MARK.sub("", line).strip()
        for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z0-9*_`\"'(])", line):
            if value in sentence:
                return sentence.strip()
    return None


def _title(text: str, path: str) -> str:
    try:
        meta, body = split_front_matter(text)
    except ValueError:
        meta, body = {}, text
    if meta.get("title"):
        return str(meta["title"])
    for line in body.splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip()
    return PurePosixPath(path).stem.replace("-", " ").replace("_", " ")


def resolve_kit(kit: Kit) -> _Resolved:
    """The kit's templates checked against its workspace (KitError naming what does not hold)."""
    ws, config_text, config_name = kit_workspace(kit)
    facts: list[_Fact] = []
    for t in kit.facts:
        where = f"kit {kit.name!r}, fact {t.component}"
        if not ws.exists(t.component):
            raise KitError(f"{where}: not a file of the workspace (declared files: {ws.layout.describe()})")
        kind = ws.component_type(t.component)
        if kind not in ("kb", "skill"):
            raise KitError(f"{where}: is a {kind} file; a fact lives in a knowledge-base page or a skill")
        text = ws.read(t.component)
        if t.claim is not None:
            claim = _fill(t.claim, value=t.right)
            if claim not in text:
                raise KitError(f"{where}: the claim {claim!r} is not in the file")
        else:
            found = _find_claim(text, t.right)
            if found is None:
                raise KitError(f"{where}: the file does not state the right value {t.right!r}")
            claim = found
        for s in t.stale:
            if s == t.right or s in claim.replace(t.right, ""):
                raise KitError(f"{where}: stale value {s!r} is the right value or already in the claim")
        if kind == "skill" and t.faults and set(t.faults) - {"update"}:
            raise KitError(f"{where}: a skill has the 'update' fault only")
        skill_name = ""
        if kind == "skill":
            skill_name = next(s.name for s in ws.skills() if s.path == t.component)
        subject = t.subject or _title(text, t.component).lower()
        facts.append(_Fact(t, kind, t.component, subject, claim, skill_name))
    tools: list[_Tool] = []
    for tt in kit.tools:
        where = f"kit {kit.name!r}, tool {tt.tool}"
        if tt.tool not in ws.tool_names():
            raise KitError(
                f"{where}: the workspace describes no such tool (tools: {', '.join(ws.tool_names())})"
            )
        path = ws.tool_prompt_path(tt.tool)
        if tt.right not in ws.read(path):
            raise KitError(f"{where}: {path} does not document the right literal {tt.right!r}")
        tools.append(_Tool(tt, path))
    rules: list[_Rule] = []
    prompt = ws.read(ws.system_prompt_path) if ws.exists(ws.system_prompt_path) else None
    for rt in kit.rules:
        where = f"kit {kit.name!r}, rule {rt.rule[:40]!r}"
        if prompt is None:
            raise KitError(f"{where}: the workspace has no system prompt ({ws.system_prompt_path})")
        line = next((ln for ln in prompt.splitlines(keepends=True) if rt.rule in ln), None)
        if line is None:
            raise KitError(f"{where}: the rule is not a line of {ws.system_prompt_path}")
        rules.append(_Rule(rt, line))
    return _Resolved(kit, ws, config_text, config_name, facts, tools, rules)


# --- the benchmark ----------------------------------------------------------------------------------


class KitBenchmark(Benchmark):
    """A benchmark generated from a kit: its workspace keeps the kit's layout."""

    layout: WorkspaceLayout | None = None
    config_text: str | None = None
    config_name: str | None = None
    kit_info: dict[str, Any] = Field(default_factory=dict)

    def workspace(self, trace: SimTrace) -> Workspace:
        return Workspace.from_files(self.base_files, layout=self.layout).with_changes(trace.workspace_changes)

    def write_workspace(self, trace: SimTrace, root: str | Path) -> Path:
        """The trace's workspace written under ``root``, with the layout's config beside it."""
        target = self.workspace(trace).write_to(root)
        if self.config_text is not None and self.config_name:
            (target / self.config_name).parent.mkdir(parents=True, exist_ok=True)
            (target / self.config_name).write_text(self.config_text, encoding="utf-8")
        return target


class _Builder(SessionBuilder):
    """The simulation's session builder, reading the prompt and tool files of the kit's layout."""

    def system(self) -> ConversationNode:
        path = self.ws.system_prompt_path
        return self._add(NodeType.SYSTEM_PROMPT, output=self.ws.read(path), source=path, name="system_prompt")

    def call_tool(self, name: str, args: dict[str, str], output: str, *, error: bool) -> ConversationNode:
        node = super().call_tool(name, args, output, error=error)
        node.source = self.ws.tool_prompt_path(name)
        return node


@dataclass
class _Scenario:
    category: FaultCategory
    variant: str
    changes: dict[str, str | None]
    faulty_path: str | None
    faulty_text: str | None
    correct_text: str
    fix: ExpectedFix
    core: Callable[[_Builder], None]
    ack: str
    avoid: set[str] = field(default_factory=set)
    description: str = ""
    fault_turn: int = 0
    boundary: str = ""


def _pick(rng: random.Random, items: list[str]) -> str:
    return items[rng.randrange(len(items))]


def _lower_first(sentence: str) -> str:
    """``"Each bag ..."`` -> ``"each bag ..."``; an acronym or a name-like word (``EUR``) is kept."""
    if sentence[:1].isupper() and not sentence[1:2].isupper():
        return sentence[0].lower() + sentence[1:]
    return sentence


def _answer(rng: random.Random, r: _Resolved, sentence: str) -> str:
    prefix = _pick(rng, r.kit.phrasing.answer_prefixes)
    if prefix and not prefix.endswith(". "):
        sentence = _lower_first(sentence)
    return prefix + sentence


def _queries(rng: random.Random, f: _Fact, question: str) -> list[str]:
    forms = [f.subject, question.rstrip("?")]
    return forms if rng.random() < 0.7 else forms[::-1]


def _top(ws: Workspace, query: str) -> str | None:
    hits = ws.search_kb(query, k=3)
    return hits[0].path if hits else None


def _year(text: str) -> int:
    """The year the page was last changed: its front matter's change date, else the latest ISO date
    the page states (a header field of its own markup: ``:revdate:``, a docinfo field, a data
    block), so a generated announcement or archived copy is dated after / before the page whatever
    format carries the page's date."""
    try:
        meta, _ = split_front_matter(text)
    except ValueError:
        meta = {}
    m = re.match(r"(\d{4})", change_date(meta) or "")
    if m:
        return int(m.group(1))
    years = [int(y) for y in re.findall(r"(?<!\d)((?:19|20)\d\d)-[01]\d-[0-3]\d(?!\d)", text)]
    return max(years) if years else 2024


def _sibling(r: _Resolved, path: str, suffix_name: str) -> str | None:
    """A new knowledge-base page beside ``path`` (None when the layout would not read it there)."""
    p = PurePosixPath(path)
    new = (p.parent / f"{p.stem}-{suffix_name}{p.suffix}").as_posix()
    if r.ws.exists(new) or r.ws.layout.kind(new) != "kb":
        return None
    return new


def _kb_stale(r: _Resolved, rng: random.Random) -> _Scenario | None:
    facts = [f for f in r.kb_facts if set(f.t.faults or KB_FAULTS) & set(STALE_VARIANTS)]
    if not facts:
        return None
    f = facts[rng.randrange(len(facts))]
    variant = _pick(rng, [v for v in STALE_VARIANTS if v in (f.t.faults or KB_FAULTS)])
    stale = _pick(rng, f.t.stale)
    healthy = r.ws.read(f.path)
    right_claim, stale_claim = f.claim, f.claim_with(stale)
    year = _year(healthy)
    changes: dict[str, str | None]
    if variant == "duplicate":
        dup = _sibling(r, f.path, str(year - 1))
        if dup is None:
            return None
        dup_text = (
            front(
                {
                    "id": f"{PurePosixPath(f.path).stem}-{year - 1}",
                    "title": json.dumps(f"{_title(healthy, f.path)} ({year - 1})"),
                    "modified": f"{year - 1}-05-14",
                    "status": _pick(rng, ["deprecated", "archived"]),
                    "superseded_by": f.path,
                    "version": 1,
                }
            )
            + f"# {_title(healthy, f.path)} ({year - 1})\n\n{stale_claim}\n"
        )
        changes = {dup: dup_text}
        faulty = dup
        fix = ExpectedFix(
            operation=Operation.DELETE,
            target_path=dup,
            authoritative_source=f.path,
            authority_rule="supersession",
        )
    else:
        changes = {f.path: healthy.replace(right_claim, stale_claim)}
        faulty = f.path
        fix = ExpectedFix(operation=Operation.UPDATE, target_path=f.path)
        if variant == "announcement":
            month = _pick(rng, ["January", "February", "March", "April", "May", "June"])
            ann = _sibling(r, f.path, f"update-{month.lower()}-{year + 1}")
            if ann is None:
                return None
            title = f"{_title(healthy, f.path)} update, {month} {year + 1}"
            changes[ann] = (
                front(
                    {
                        "id": PurePosixPath(ann).stem,
                        "title": json.dumps(title),
                        "modified": f"{year + 1}-{dt.datetime.strptime(month, '%B').month:02d}-01",
                        "status": "official",
                    }
                )
                + f"# {title}\n\nEffective {month} 1, {year + 1}: {_lower_first(right_claim)}\n"
            )
            fix = ExpectedFix(
                operation=Operation.UPDATE,
                target_path=f.path,
                authoritative_source=ann,
                authority_rule="recency",
            )
    ws = r.ws.with_changes(changes)
    question = _pick(rng, f.t.questions)
    queries = [q for q in _queries(rng, f, question) if _top(ws, q) == faulty]
    if not queries:
        return None
    phr = r.kit.phrasing
    reasoning = rng.random() < 0.5
    double_read = rng.random() < 0.3
    correction = _fill(
        _pick(rng, f.t.corrections or phr.stale_corrections), right=f.t.right, stale=stale, subject=f.subject
    )
    sc = _Scenario(
        category=FaultCategory.KB_CONTENT_STALE,
        variant=variant + ("+reread" if double_read else ""),
        changes=changes,
        faulty_path=faulty,
        faulty_text=stale,
        correct_text=f.t.right,
        fix=fix,
        core=lambda b: None,
        ack=_fill(_pick(rng, phr.acknowledgements), subject=f.subject, right=f.t.right),
        avoid={faulty, f.path},
        description=f"{faulty} states the {f.subject} as {stale} (now {f.t.right})",
    )

    def core(b: _Builder) -> None:
        b.user(question)
        sc.fault_turn = b.turn
        if reasoning:
            b.reasoning(_fill(_pick(rng, phr.reasoning), subject=f.subject))
        b.search(queries[0])
        if double_read:
            b.read_entry(faulty)
        b.agent(_answer(rng, r, stale_claim))
        sc.boundary = b.user(correction).id

    sc.core = core
    return sc


def _kb_gap(r: _Resolved, rng: random.Random) -> _Scenario | None:
    facts = [f for f in r.kb_facts if "gap" in (f.t.faults or KB_FAULTS)]
    if not facts:
        return None
    f = facts[rng.randrange(len(facts))]
    phr = r.kit.phrasing
    question = _pick(rng, f.t.questions)
    query = _queries(rng, f, question)[0]
    reasoning = rng.random() < 0.5
    correction = _fill(
        _pick(rng, f.t.gap_corrections or phr.gap_corrections), right=f.t.right, subject=f.subject
    )
    sc = _Scenario(
        category=FaultCategory.KB_CONTENT_GAP,
        variant="gap",
        changes={f.path: None},
        faulty_path=None,
        faulty_text=None,
        correct_text=f.t.right,
        fix=ExpectedFix(operation=Operation.CREATE, target_path=f.path),
        core=lambda b: None,
        ack=_fill(_pick(rng, phr.acknowledgements), subject=f.subject, right=f.t.right),
        avoid={f.path},
        description=f"the knowledge base has no page on the {f.subject}",
    )

    def core(b: _Builder) -> None:
        b.user(question)
        sc.fault_turn = b.turn
        if reasoning:
            b.reasoning(_fill(_pick(rng, phr.reasoning), subject=f.subject))
        b.search(query)
        b.agent(_fill(_pick(rng, phr.gap_replies), subject=f.subject))
        sc.boundary = b.user(correction).id

    sc.core = core
    return sc


def _alias_options(r: _Resolved) -> list[tuple[_Fact, str, _Fact]]:
    by_path = {f.path: f for f in r.kb_facts}
    out = []
    for f in r.kb_facts:
        for alias in f.t.alias_questions:
            top = _top(r.ws, alias.rstrip("?"))
            if top is not None and top != f.path and top in by_path:
                out.append((f, alias, by_path[top]))
    return out


def _retrieval_failure(r: _Resolved, rng: random.Random) -> _Scenario | None:
    options = _alias_options(r)
    if not options:
        return None
    f, alias, decoy = options[rng.randrange(len(options))]
    phr = r.kit.phrasing
    correction = _fill(_pick(rng, phr.rf_corrections), right=f.t.right, subject=f.subject)
    reasoning = rng.random() < 0.5
    sc = _Scenario(
        category=FaultCategory.RETRIEVAL_FAILURE,
        variant="alias",
        changes={},
        faulty_path=decoy.path,
        faulty_text=decoy.t.right,
        correct_text=f.t.right,
        fix=ExpectedFix(
            operation=Operation.UPDATE, target_path=f.path, authoritative_source=f.path, authority_rule="only"
        ),
        core=lambda b: None,
        ack=_fill(_pick(rng, phr.acknowledgements), subject=f.subject, right=f.t.right),
        avoid={decoy.path, f.path},
        description=f"{alias!r} retrieves {decoy.path} instead of {f.path}",
    )

    def core(b: _Builder) -> None:
        b.user(alias)
        sc.fault_turn = b.turn
        if reasoning:
            b.reasoning("Let me search the knowledge base for that.")
        b.search(alias.rstrip("?"))
        b.agent(_answer(rng, r, decoy.claim))
        sc.boundary = b.user(correction).id

    sc.core = core
    return sc


def _skill_stale(r: _Resolved, rng: random.Random) -> _Scenario | None:
    if not r.skill_facts:
        return None
    f = r.skill_facts[rng.randrange(len(r.skill_facts))]
    stale = _pick(rng, f.t.stale)
    stale_claim = f.claim_with(stale)
    phr = r.kit.phrasing
    question = _pick(rng, f.t.questions)
    reasoning = rng.random() < 0.5
    correction = _fill(
        _pick(rng, f.t.corrections or phr.stale_corrections), right=f.t.right, stale=stale, subject=f.subject
    )
    sc = _Scenario(
        category=FaultCategory.SKILL_FILE_STALE,
        variant="skill",
        changes={f.path: r.ws.read(f.path).replace(f.claim, stale_claim)},
        faulty_path=f.path,
        faulty_text=stale,
        correct_text=f.t.right,
        fix=ExpectedFix(operation=Operation.UPDATE, target_path=f.path),
        core=lambda b: None,
        ack=_fill(_pick(rng, phr.acknowledgements), subject=f.subject, right=f.t.right),
        avoid={f.path},
        description=f"{f.path} states {stale} (now {f.t.right})",
    )

    def core(b: _Builder) -> None:
        b.user(question)
        sc.fault_turn = b.turn
        if reasoning:
            b.reasoning(f"This is covered by the {f.skill_name} procedure.")
        b.read_skill(f.skill_name, f.path)
        b.agent(_answer(rng, r, stale_claim))
        sc.boundary = b.user(correction).id

    sc.core = core
    return sc


def _tool_args(t: ToolTemplate, literal: str) -> dict[str, str]:
    return {k.replace("{literal}", literal): v.replace("{literal}", literal) for k, v in t.args.items()}


def _tool_error(r: _Resolved, rng: random.Random) -> _Scenario | None:
    if not r.tools:
        return None
    tool = r.tools[rng.randrange(len(r.tools))]
    t = tool.t
    wrong = _pick(rng, t.wrong)
    phr = r.kit.phrasing
    request = _pick(rng, t.requests)
    retry = rng.random() < 0.4
    reasoning = rng.random() < 0.5
    error = _fill(t.error, wrong=wrong, right=t.right)
    complaint = _pick(rng, t.complaints or phr.tool_complaints)
    sc = _Scenario(
        category=FaultCategory.TOOL_PROMPT_ERROR,
        variant="tool" + ("+retry" if retry else ""),
        changes={tool.path: r.ws.read(tool.path).replace(t.right, wrong)},
        faulty_path=tool.path,
        faulty_text=wrong,
        correct_text=t.right,
        fix=ExpectedFix(operation=Operation.UPDATE, target_path=tool.path),
        core=lambda b: None,
        ack="I'm sorry about that. I've reported the problem so it can be fixed.",
        avoid={tool.path},
        description=f"{tool.path} documents {wrong!r}; {t.tool} expects {t.right!r}",
    )

    def core(b: _Builder) -> None:
        b.user(request)
        sc.fault_turn = b.turn
        if reasoning:
            b.reasoning(f"I'll use {t.tool} for this.")
        b.call_tool(t.tool, _tool_args(t, wrong), error, error=True)
        if retry:
            b.call_tool(t.tool, _tool_args(t, wrong), error, error=True)
        b.agent(_pick(rng, phr.tool_failure_replies))
        sc.boundary = b.user(complaint).id

    sc.core = core
    return sc


def _system_gap(r: _Resolved, rng: random.Random) -> _Scenario | None:
    if not r.rules:
        return None
    rule = r.rules[rng.randrange(len(r.rules))]
    path = r.ws.system_prompt_path
    question = _pick(rng, rule.t.questions)
    correction = _pick(rng, rule.t.corrections)
    search = rng.random() < 0.4
    sc = _Scenario(
        category=FaultCategory.SYSTEM_PROMPT_GAP,
        variant="policy",
        changes={path: r.ws.read(path).replace(rule.line, "", 1)},
        faulty_path=path,
        faulty_text=None,
        correct_text=rule.t.rule,
        fix=ExpectedFix(operation=Operation.UPDATE, target_path=path),
        core=lambda b: None,
        ack="You're right, I'm sorry. " + rule.t.good_reply,
        description=f"the system prompt lacks: {rule.t.rule}",
    )

    def core(b: _Builder) -> None:
        b.user(question)
        sc.fault_turn = b.turn
        if search:
            b.search(question.rstrip("?"))
        b.agent(rule.t.bad_reply)
        sc.boundary = b.user(correction).id

    sc.core = core
    return sc


SCENARIOS: dict[FaultCategory, Callable[[_Resolved, random.Random], _Scenario | None]] = {
    FaultCategory.KB_CONTENT_STALE: _kb_stale,
    FaultCategory.KB_CONTENT_GAP: _kb_gap,
    FaultCategory.RETRIEVAL_FAILURE: _retrieval_failure,
    FaultCategory.SKILL_FILE_STALE: _skill_stale,
    FaultCategory.TOOL_PROMPT_ERROR: _tool_error,
    FaultCategory.SYSTEM_PROMPT_GAP: _system_gap,
}


def kit_categories(r: _Resolved) -> list[FaultCategory]:
    """The fault categories the kit's templates can produce, in the benchmark's order."""
    have = {
        FaultCategory.KB_CONTENT_STALE: any(
            set(f.t.faults or KB_FAULTS) & set(STALE_VARIANTS) for f in r.kb_facts
        ),
        FaultCategory.KB_CONTENT_GAP: any("gap" in (f.t.faults or KB_FAULTS) for f in r.kb_facts),
        FaultCategory.RETRIEVAL_FAILURE: bool(_alias_options(r)),
        FaultCategory.SKILL_FILE_STALE: bool(r.skill_facts),
        FaultCategory.TOOL_PROMPT_ERROR: bool(r.tools),
        FaultCategory.SYSTEM_PROMPT_GAP: bool(r.rules),
    }
    return [c for c in CATEGORY_ORDER if have[c]]


# --- sessions ---------------------------------------------------------------------------------------


@dataclass
class _Filler:
    fact: _Fact
    question: str
    query: str
    reasoning: bool
    opener: str


def _fillers(r: _Resolved, rng: random.Random, ws: Workspace, avoid: set[str]) -> list[_Filler]:
    """Ordinary question-and-answer turns about healthy pages whose search touches nothing in ``avoid``."""
    out = []
    facts = [f for f in r.kb_facts if f.path not in avoid]
    rng.shuffle(facts)
    for f in facts:
        if not ws.exists(f.path) or f.claim not in ws.read(f.path):
            continue
        question = _pick(rng, f.t.questions)
        for query in _queries(rng, f, question):
            hits = [h.path for h in ws.search_kb(query, k=3)]
            if hits and hits[0] == f.path and not (set(hits) & avoid):
                out.append(
                    _Filler(
                        f, question, query, rng.random() < 0.4, _pick(rng, r.kit.phrasing.control_openers)
                    )
                )
                break
    return out


def _qa(b: _Builder, rng: random.Random, r: _Resolved, f: _Filler, *, first: bool) -> None:
    b.user(f.question if first else _fill(f.opener, question=f.question))
    if f.reasoning:
        b.reasoning(_fill(_pick(rng, r.kit.phrasing.reasoning), subject=f.fact.subject))
    b.search(f.query)
    b.agent(_answer(rng, r, f.fact.claim))


def _tier_of(n_nodes: int) -> int:
    for tier, (_, hi) in sorted(TIERS.items()):
        if n_nodes <= hi:
            return tier
    return max(TIERS)


def _session(
    r: _Resolved,
    rng: random.Random,
    sid: str,
    ws: Workspace,
    tier: int,
    core: Callable[[_Builder], None],
    avoid: set[str],
    post_options: dict[str, int],
    ack: str,
) -> tuple[Conversation, int]:
    """The session around ``core``: ordinary turns before and after, sized for ``tier`` when the
    kit has enough pages (else as long as it can be; the tier recorded is the one it reached)."""
    probe = _Builder(sid, ws)
    state = rng.getstate()
    core(probe)
    rng.setstate(state)
    fillers = _fillers(r, rng, ws, avoid)
    plans = []
    for t in (tier, *sorted(TIERS, key=lambda x: abs(x - tier))):
        plans = _plans(len(probe.nodes), t, len(fillers), post_options)
        if plans:
            break
    if plans:
        sizes, post = plans[rng.randrange(len(plans))]
    else:
        sizes, post = (), "none"
    pre = fillers[: len(sizes)]
    for f, size in zip(pre, sizes, strict=True):
        f.reasoning = size == 4
    post_filler = fillers[len(sizes)] if "filler" in post else None
    if post_filler is not None:
        post_filler.reasoning = "filler4" in post
    b = _Builder(sid, ws)
    b.system()
    for k, f in enumerate(pre):
        _qa(b, rng, r, f, first=k == 0)
    core(b)
    phr = r.kit.phrasing
    if post.startswith("ack"):
        b.agent(ack)
    if post_filler is not None:
        _qa(b, rng, r, post_filler, first=False)
    if "thanks" in post:
        b.user(_pick(rng, phr.thanks))
    if "welcome" in post:
        b.agent(_pick(rng, phr.welcome))
    if post == "giveup":
        b.user(_pick(rng, phr.give_up))
    conv = b.build()
    return conv, _tier_of(len(conv.nodes))


def _ground_truth(
    name: str, seed: int, sid: str, tier: int, conv: Conversation, sc: _Scenario
) -> GroundTruth:
    nodes = conv.nodes
    boundary = conv.index(sc.boundary)
    if sc.faulty_path is not None:
        root = next(n for n in nodes if sc.faulty_path in n.sources)
    else:
        root = next(n for n in nodes if n.type == NodeType.KB_RETRIEVAL and n.turn == sc.fault_turn)
    start = conv.index(root.id)
    propagation = []
    for n in nodes[start + 1 : boundary]:
        if (
            n.type in (NodeType.KB_RETRIEVAL, NodeType.SKILL_LOOKUP, NodeType.TOOL_CALL)
            and sc.faulty_path in n.sources
        ):
            propagation.append(n.id)
        elif n.type in (NodeType.AGENT, NodeType.REASONING) and n.turn == sc.fault_turn:
            propagation.append(n.id)
    attributions = (
        {root.id: 1.0}
        if not propagation
        else {root.id: 0.6, **{p: round(0.4 / len(propagation), 6) for p in propagation}}
    )
    return GroundTruth(
        trace_id=sid,
        domain=name,
        seed=seed,
        dissatisfied=True,
        tier=tier,
        n_nodes=len(nodes),
        fault=FaultSpec(
            category=sc.category,
            variant=sc.variant,
            faulty_path=sc.faulty_path,
            faulty_text=sc.faulty_text,
            correct_text=sc.correct_text,
            fault_turn=sc.fault_turn,
            description=sc.description,
        ),
        root_node_id=root.id,
        attributions=attributions,
        component_type=CATEGORY_COMPONENT[sc.category],
        component_path=sc.fix.target_path
        if sc.category in (FaultCategory.KB_CONTENT_GAP, FaultCategory.RETRIEVAL_FAILURE)
        else sc.faulty_path,
        fix=sc.fix,
    )


def _dissatisfied(r: _Resolved, cats: list[FaultCategory], seed: int, i: int) -> SimTrace:
    name = r.kit.name
    category = cats[i % len(cats)]
    tier = (i // len(cats)) % 3 + 1
    rng = random.Random(f"kit:{name}:{seed}:d{i}")
    sid = f"{name}-s{seed}-{i:03d}"
    for _ in range(200):
        sc = SCENARIOS[category](r, rng)
        if sc is None:
            continue
        ws = r.ws.with_changes(sc.changes)
        conv, reached = _session(r, rng, sid, ws, tier, sc.core, sc.avoid, _POST_DISSATISFIED, sc.ack)
        gt = _ground_truth(name, seed, sid, reached, conv, sc)
        return SimTrace(conversation=conv, ground_truth=gt, workspace_changes=sc.changes)
    raise GenerationError(
        f"kit {name!r}: could not build a {category} session (e.g. no question whose search lands on "
        "the faulty page; add questions that name the page's subject)"
    )


def _control(r: _Resolved, seed: int, j: int) -> SimTrace:
    name = r.kit.name
    tier = j % 3 + 1
    rng = random.Random(f"kit:{name}:{seed}:c{j}")
    sid = f"{name}-s{seed}-c{j:02d}"
    kinds = [
        k
        for k, have in (
            ("fact", bool(r.kb_facts)),
            ("skill", bool(r.skill_facts)),
            ("tool", bool(r.tools)),
            ("rule", bool(r.rules)),
        )
        if have
    ]
    kind = kinds[j % len(kinds)]
    phr = r.kit.phrasing
    avoid: set[str] = set()
    core: Callable[[_Builder], None]
    if kind == "skill":
        f = r.skill_facts[rng.randrange(len(r.skill_facts))]
        question = _pick(rng, f.t.questions)

        def core(b: _Builder) -> None:
            b.user(question)
            b.read_skill(f.skill_name, f.path)
            b.agent(_answer(rng, r, f.claim))

    elif kind == "tool":
        tool = r.tools[rng.randrange(len(r.tools))].t
        request = _pick(rng, tool.requests)

        def core(b: _Builder) -> None:
            b.user(request)
            b.reasoning(f"I'll use {tool.tool} for this.")
            b.call_tool(tool.tool, _tool_args(tool, tool.right), tool.success, error=False)
            b.agent(tool.done_reply)

    elif kind == "rule":
        rule = r.rules[rng.randrange(len(r.rules))].t
        question = _pick(rng, rule.questions)

        def core(b: _Builder) -> None:
            b.user(question)
            b.agent(rule.good_reply)

    else:
        f = r.kb_facts[rng.randrange(len(r.kb_facts))]
        question = _pick(rng, f.t.questions)
        query = _queries(rng, f, question)[0]
        avoid = {f.path}

        def core(b: _Builder) -> None:
            b.user(question)
            b.search(query)
            b.agent(_answer(rng, r, f.claim))

    conv, reached = _session(r, rng, sid, r.ws, tier, core, avoid, _POST_CONTROL, "")
    gt = GroundTruth(
        trace_id=sid, domain=name, seed=seed, dissatisfied=False, tier=reached, n_nodes=len(conv.nodes)
    )
    del phr
    return SimTrace(conversation=conv, ground_truth=gt)


def generate_kit_benchmark(
    kit: Kit | str | Path, *, seed: int = 0, n_dissatisfied: int = 60, n_control: int = 15
) -> KitBenchmark:
    """A seeded labelled set from a kit: ``n_dissatisfied`` faulty sessions (the categories the
    kit can produce, in turn) and ``n_control`` clean ones. Same seed, same set."""
    if n_dissatisfied < 0 or n_control < 0:
        raise ValueError(
            f"trace counts must be >= 0, got n_dissatisfied={n_dissatisfied}, n_control={n_control}"
        )
    kit = kit if isinstance(kit, Kit) else load_kit(kit)
    r = resolve_kit(kit)
    cats = kit_categories(r)
    if n_dissatisfied and not cats:
        raise KitError(f"kit {kit.name!r}: its templates produce no fault category")
    traces = [_dissatisfied(r, cats, seed, i) for i in range(n_dissatisfied)]
    traces += [_control(r, seed, j) for j in range(n_control)]
    layout = None if r.ws.layout.default else r.ws.layout
    info = {
        "name": kit.name,
        "description": kit.description,
        "written": kit.written,
        "categories": [c.value for c in cats],
        "templates": {"facts": len(kit.facts), "tools": len(kit.tools), "rules": len(kit.rules)},
        "layout": r.ws.layout.describe(),
    }
    return KitBenchmark(
        domain=kit.name,
        seed=seed,
        base_files=r.ws.files,
        traces=traces,
        layout=layout,
        config_text=r.config_text,
        config_name=r.config_name,
        kit_info=info,
    )


def run_kit_bench(
    kits: Sequence[Kit | str | Path] | Kit | str | Path,
    *,
    seed: int = 0,
    n_dissatisfied: int = 60,
    n_control: int = 15,
    include_traces: bool = False,
    recorded: bool = False,
) -> dict[str, Any]:
    """Generate, verify and score one or more kits with the offline pipeline: the report of
    ``causal-mw bench context`` (top level: the first kit's metrics; ``domains``: each kit's;
    ``pooled``), plus ``kits`` (each kit's name, description, when it was written, the fault
    categories its templates produce and the layout). ``recorded``: each session played by a real
    ``create_agent`` agent and read back from its spans (:mod:`benchmarks.context.recorded`)."""
    from benchmarks.context.bench import score_benchmarks

    items: list[Kit | str | Path] = [kits] if isinstance(kits, Kit | str | Path) else list(kits)
    if not items:
        raise ValueError("no kit given")
    benches = [
        generate_kit_benchmark(k, seed=seed, n_dissatisfied=n_dissatisfied, n_control=n_control)
        for k in items
    ]
    names = [b.domain for b in benches]
    if len(set(names)) != len(names):
        raise KitError(f"kits must have distinct names, got {names}")
    if recorded:
        from benchmarks.context.recorded import score_recorded

        out = score_recorded(benches, primary=names[0], seed=seed, include_traces=include_traces)
    else:
        out = score_benchmarks(benches, primary=names[0], seed=seed, include_traces=include_traces)
    out["kits"] = {b.domain: b.kit_info for b in benches}
    return out


__all__ = [
    "FactTemplate",
    "Kit",
    "KitBenchmark",
    "KitError",
    "KitPhrasing",
    "KitWorkspace",
    "RuleTemplate",
    "ToolTemplate",
    "generate_kit_benchmark",
    "kit_categories",
    "load_kit",
    "resolve_kit",
    "run_kit_bench",
]
