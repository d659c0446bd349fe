"""What a simulated domain is made of: facts, skills, tools, policies and how its users talk.

A domain is pure data. The generator turns it into a workspace (files) and into sessions; the
pipeline never sees these models, only the files and the sessions.
"""

from __future__ import annotations

from pydantic import BaseModel, Field, model_validator


class Fact(BaseModel):
    """One knowledge-base entry ``kb/<section>/<key>.md`` whose main claim can go stale."""

    key: str = Field(description="file stem; by convention the slug of the subject")
    section: str
    title: str
    subject: str = Field(description="noun phrase without article, e.g. 'overdraft fee'")
    claim: str = Field(description="the main sentence, with {value}")
    value: str
    stale: list[str] = Field(min_length=1, description="outdated values")
    questions: list[str] = Field(min_length=1)
    extra: list[str] = Field(default_factory=list, description="other (never faulty) sentences of the entry")
    extra_question: str | None = Field(default=None, description="a question answered by extra[0]")
    alias_questions: list[str] = Field(
        default_factory=list, description="wordings that a lexical search may route to another entry"
    )
    owner: str = "knowledge-team"

    @model_validator(mode="after")
    def _check(self) -> Fact:
        if "{value}" not in self.claim:
            raise ValueError(f"fact {self.key!r}: claim must contain {{value}}")
        if self.extra_question and not self.extra:
            raise ValueError(f"fact {self.key!r}: extra_question needs an extra sentence")
        return self


class Skill(BaseModel):
    """``skills/<name>/SKILL.md``: numbered steps, one of which states a value that can go stale."""

    name: str
    title: str
    description: str
    steps: list[str] = Field(min_length=2, description="one step contains {value}")
    value: str
    stale: list[str] = Field(min_length=1)
    questions: list[str] = Field(min_length=1)
    backing_fact: str | None = Field(default=None, description="key of a KB fact stating the same value")

    @model_validator(mode="after")
    def _check(self) -> Skill:
        if sum("{value}" in s for s in self.steps) != 1:
            raise ValueError(f"skill {self.name!r}: exactly one step must contain {{value}}")
        return self

    @property
    def claim(self) -> str:
        return next(s for s in self.steps if "{value}" in s)


class Tool(BaseModel):
    """``tools/<name>.md``: a tool whose description may document a literal the API rejects."""

    name: str
    description: str
    parameters: list[str] = Field(min_length=1, description="one line contains {literal}")
    right: str
    wrong: list[str] = Field(min_length=1)
    requests: list[str] = Field(min_length=1, description="user requests that make the agent call it")
    args: dict[str, str] = Field(description="call arguments; the value '{literal}' is filled in")
    success: str = Field(description="tool output on success")
    error: str = Field(description="error output with {wrong} and {right}")
    done_reply: str = Field(description="agent reply after success")

    @model_validator(mode="after")
    def _check(self) -> Tool:
        if sum("{literal}" in p for p in self.parameters) != 1:
            raise ValueError(f"tool {self.name!r}: exactly one parameter line must contain {{literal}}")
        if "{literal}" not in self.args and "{literal}" not in self.args.values():
            raise ValueError(f"tool {self.name!r}: one argument name or value must be '{{literal}}'")
        return self


class Policy(BaseModel):
    """A rule of the system prompt the agent breaks when it is missing."""

    instruction: str
    questions: list[str] = Field(min_length=1)
    bad_reply: str
    good_reply: str
    corrections: list[str] = Field(min_length=1, description="prescriptive complaints")


class Phrasing(BaseModel):
    """How users and the agent talk in this domain (templates use {expected} {got} {subject})."""

    stale_corrections: list[str] = Field(min_length=1)
    gap_corrections: list[str] = Field(min_length=1)
    rf_corrections: list[str] = Field(min_length=1)
    tool_complaints: list[str] = Field(min_length=1)
    answer_prefixes: list[str] = Field(min_length=1)
    gap_replies: list[str] = Field(min_length=1, description="agent finds nothing; {subject}")
    acknowledgements: list[str] = Field(
        min_length=1, description="agent accepts a correction; {subject} {expected}"
    )
    tool_failure_replies: list[str] = Field(min_length=1)
    thanks: list[str] = Field(min_length=1)
    welcome: list[str] = Field(min_length=1)
    give_up: list[str] = Field(min_length=1)
    control_openers: list[str] = Field(min_length=1, description="benign follow-up lead-ins; {question}")
    reasoning: list[str] = Field(min_length=1, description="agent plans a lookup; {subject}")


class Domain(BaseModel):
    name: str
    organization: str
    system_intro: str
    facts: list[Fact] = Field(min_length=8)
    skills: list[Skill] = Field(min_length=3)
    tools: list[Tool] = Field(min_length=2)
    policies: list[Policy] = Field(min_length=2)
    phrasing: Phrasing

    def fact(self, key: str) -> Fact:
        for f in self.facts:
            if f.key == key:
                return f
        raise KeyError(f"domain {self.name!r} has no fact {key!r}")
