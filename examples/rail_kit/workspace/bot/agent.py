"""Builds the Vale agent."""
from pathlib import Path

from langchain.agents import create_agent

from .tools import ALL_TOOLS

SYSTEM_PROMPT = (Path(__file__).parent / "system_prompt.md").read_text()


def build_agent(model: str = "openai:gpt-4.1-mini"):
    return create_agent(model, tools=ALL_TOOLS, system_prompt=SYSTEM_PROMPT)
