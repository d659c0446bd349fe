"""Rendering a domain into workspace files (the context sources the simulated agent reads)."""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Mapping

from benchmarks.context.simulation.domain import Domain, Fact, Skill, Tool
from causal_middleware.context.workspace import SYSTEM_PROMPT_PATH, tool_prompt_path

AUTHORS = ("a.okafor", "j.lindqvist", "m.rossi", "s.tanaka", "p.nguyen", "r.haddad")


def fact_path(fact: Fact) -> str:
    return f"kb/{fact.section}/{fact.key}.md"


def skill_path(skill: Skill) -> str:
    return f"skills/{skill.name}/SKILL.md"


def date(rng: random.Random, start: dt.date, end: dt.date) -> str:
    days = (end - start).days
    return (start + dt.timedelta(days=rng.randrange(max(days, 1)))).isoformat()


def front(meta: Mapping[str, object]) -> str:
    lines = ["---"]
    for k, v in meta.items():
        if v is None:
            continue
        if isinstance(v, list):
            lines.append(f"{k}: [{', '.join(str(x) for x in v)}]")
        else:
            lines.append(f"{k}: {v}")
    lines.append("---")
    return "\n".join(lines) + "\n"


def render_fact(
    fact: Fact,
    value: str,
    *,
    modified: str,
    author: str,
    version: int = 3,
    status: str = "official",
    level: str = "department",
    owner: str | None = "knowledge-team",
    supersedes: list[str] | None = None,
    title: str | None = None,
    entry_id: str | None = None,
    extra: bool = True,
) -> str:
    body = fact.claim.format(value=value)
    if extra and fact.extra:
        body += " " + " ".join(fact.extra)
    meta = {
        "id": entry_id or f"kb-{fact.key}",
        "title": title or fact.title,
        "modified": modified,
        "author": author,
        "version": version,
        "status": status,
        "owner": owner,
        "level": level,
        "supersedes": supersedes,
    }
    return front(meta) + f"# {title or fact.title}\n\n{body}\n"


def render_skill(skill: Skill, value: str, *, modified: str) -> str:
    steps = "\n".join(f"{i}. {s.format(value=value)}" for i, s in enumerate(skill.steps, start=1))
    meta = {
        "name": skill.name,
        "description": skill.description,
        "owner": "support-operations",
        "status": "official",
        "level": "team",
        "modified": modified,
    }
    return front(meta) + f"# {skill.title}\n\n{steps}\n"


def render_tool(tool: Tool, literal: str, *, modified: str) -> str:
    params = "\n".join("- " + p.replace("{literal}", literal) for p in tool.parameters)
    meta = {"name": tool.name, "version": 2, "modified": modified}
    return front(meta) + f"# {tool.name}\n\n{tool.description}\n\nParameters:\n{params}\n"


def render_system_prompt(domain: Domain, *, skip_policy: int | None = None) -> str:
    rules = [p.instruction for i, p in enumerate(domain.policies) if i != skip_policy]
    rules.append("Answer from the knowledge base and skills; when they have no answer, say so.")
    lines = "\n".join(f"- {r}" for r in rules)
    return f"# System prompt\n\n{domain.system_intro}\n\nRules:\n{lines}\n"


def base_files(domain: Domain, seed: int) -> dict[str, str]:
    """The domain's healthy workspace: every fact, skill, tool and policy correct."""
    rng = random.Random(f"{domain.name}:{seed}:base")
    files = {SYSTEM_PROMPT_PATH: render_system_prompt(domain)}
    for tool in domain.tools:
        files[tool_prompt_path(tool.name)] = render_tool(
            tool, tool.right, modified=date(rng, dt.date(2024, 1, 1), dt.date(2024, 12, 31))
        )
    for skill in domain.skills:
        files[skill_path(skill)] = render_skill(
            skill, skill.value, modified=date(rng, dt.date(2023, 1, 1), dt.date(2023, 12, 31))
        )
    for fact in domain.facts:
        files[fact_path(fact)] = render_fact(
            fact,
            fact.value,
            modified=date(rng, dt.date(2024, 1, 1), dt.date(2024, 12, 31)),
            author=rng.choice(AUTHORS),
            version=rng.randint(2, 6),
        )
    return files
