"""A user's own support agent, not one of ours: ``create_agent`` over the user's help-center docs.

The workspace is laid out the user's way (``agent/system.txt``, ``docs/faq/**``, ``playbooks/``,
``agent/tools.json``) and declared by ``causal-context.yaml``. The agent's two tools read the
files at call time: ``search_help_center`` prints the best pages as text (no paths, no JSON) and
``open_playbook`` prints one playbook. The chat model is scripted but reads what the tools gave
it: it answers with the sentence of the tool output that best matches the question, so a fixed
page gives a fixed answer.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver

CONFIG = """\
# Where this agent's context comes from (read by causal-mw context).
prompt: agent/system.txt
kb: docs/faq/**/*.md
skills: playbooks/*.md
tools: agent/tools.json
"""

FILES = {
    "causal-context.yaml": CONFIG,
    "README.md": "# Acme Cloud support bot\n\nInternal notes: the refund window is 14 days.\n",
    "agent/system.txt": (
        "You are the support assistant of Acme Cloud.\n"
        "Answer from the help center; open a playbook for account changes.\n"
    ),
    "agent/tools.json": json.dumps(
        {
            "tools": [
                {"name": "search_help_center", "description": "Search the Acme help center by keywords."},
                {"name": "open_playbook", "description": "Open a support playbook by its name."},
            ]
        },
        indent=2,
    )
    + "\n",
    "docs/faq/billing/refunds.md": (
        "# Refunds\n\n"
        "Refunds can be requested within 14 days of purchase. "
        "Refunds are paid back to the original payment method.\n"
    ),
    "docs/faq/billing/invoices.md": (
        "# Invoices\n\nInvoices are emailed on the first day of each billing month. "
        "You can download past invoices from the billing page.\n"
    ),
    "docs/faq/account/password-reset.md": (
        "# Password reset\n\nUse the Forgot password link on the sign-in page to reset your password. "
        "The reset link expires after 2 hours.\n"
    ),
    "playbooks/cancel-subscription.md": (
        "---\nname: cancel-subscription\ndescription: Cancel a customer's subscription.\n---\n"
        "# Cancel a subscription\n\n1. Confirm the account owner.\n"
        "2. Cancel from the Plan tab; the subscription stays active until the end of the billing period.\n"
    ),
}

STALE_PAGE = "docs/faq/billing/refunds.md"
_WORD = re.compile(r"[a-z0-9]+")
_STOP = {
    "the",
    "a",
    "an",
    "is",
    "are",
    "do",
    "i",
    "my",
    "how",
    "what",
    "of",
    "to",
    "for",
    "can",
    "many",
    "you",
}


def write_workspace(root: Path) -> Path:
    for rel, text in FILES.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return root


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def _stem(w: str) -> str:
    return w[:-1] if w.endswith("s") and len(w) > 3 else w


def _overlap(a: str, b: str) -> int:
    return len({_stem(w) for w in _words(a)} & {_stem(w) for w in _words(b)})


def make_tools(root: Path) -> list[BaseTool]:
    """The user's tools, reading the workspace as it is at call time."""

    @tool
    def search_help_center(query: str) -> str:
        """Search the Acme help center by keywords."""
        pages = sorted((root / "docs" / "faq").rglob("*.md"))
        scored = sorted(
            ((_overlap(query, p.read_text(encoding="utf-8")), str(p)) for p in pages), reverse=True
        )
        hits = [Path(p).read_text(encoding="utf-8").strip() for score, p in scored[:2] if score > 0]
        return "Help center results:\n\n" + "\n\n----\n\n".join(hits) if hits else "No results."

    @tool
    def open_playbook(name: str) -> str:
        """Open a support playbook by its name."""
        path = root / "playbooks" / f"{name}.md"
        return path.read_text(encoding="utf-8") if path.is_file() else f"Error: no playbook {name!r}"

    return [search_help_center, open_playbook]


class ScriptedSupportModel(FakeMessagesListChatModel):
    """A scripted chat model that reads its tools' output (``bind_tools`` returns itself).

    A question (a user turn ending in "?") calls a tool: ``open_playbook`` for a cancellation,
    else ``search_help_center``; after the tool it answers with the tool output's sentence that
    best matches the question. Any other user turn gets a short acknowledgement.
    """

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedSupportModel:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])

    def _reply(self, messages: list[BaseMessage]) -> AIMessage:
        last = messages[-1]
        question = next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)
        asked = str(question.content) if question else ""
        if isinstance(last, ToolMessage):
            return AIMessage(content=_best_sentence(str(last.content), asked))
        text = str(last.content)
        if not text.rstrip().endswith("?"):
            low = text.lower()
            if "thank" in low or "great" in low:
                return AIMessage(content="You're welcome! Anything else?")
            return AIMessage(content="Sorry about that, and thank you for letting me know.")
        n = sum(isinstance(m, ToolMessage) for m in messages)
        if "cancel" in text.lower():
            call = {"name": "open_playbook", "args": {"name": "cancel-subscription"}, "id": f"call-{n}"}
        else:
            call = {"name": "search_help_center", "args": {"query": text}, "id": f"call-{n}"}
        return AIMessage(content="", tool_calls=[call])


def _best_sentence(output: str, question: str) -> str:
    body = re.sub(r"^---\n.*?\n---\n", "", output, flags=re.DOTALL)
    sentences = [
        s.strip()
        for s in re.split(r"(?<=[.!?])\s+|\n", body)
        if s.strip() and not s.lstrip().startswith(("#", "Help center results", "----"))
    ]
    if not sentences:
        return "I could not find that in the help center."
    best = max(sentences, key=lambda s: (_overlap(question, s), -sentences.index(s)))
    return re.sub(r"^\d+\.\s*", "", best)


def build_agent(root: Path) -> Any:
    """The user's agent: ``create_agent`` with their system prompt and tools, and a checkpointer."""
    return create_agent(
        ScriptedSupportModel(responses=[]),
        tools=make_tools(root),
        system_prompt=(root / "agent" / "system.txt").read_text(encoding="utf-8"),
        checkpointer=InMemorySaver(),
    )


SESSIONS: dict[str, list[str]] = {
    # Dissatisfied: the refunds page states the old 14-day window.
    "acme-refund-1": [
        "How many days do I have to request a refund?",
        "No, that's wrong. It's 30 days now.",
        "Thanks.",
    ],
    "acme-refund-2": [
        "What is the refund window after a purchase?",
        "That is outdated: refunds can be requested within 30 days of purchase since the policy change.",
    ],
    # Satisfied: a playbook answer the user accepts.
    "acme-cancel": ["How do I cancel my subscription?", "Great, thanks!"],
}
