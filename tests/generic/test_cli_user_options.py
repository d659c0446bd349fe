"""``causal-mw diagnose/repair`` on a user's own graph with the options a user reaches for:
``--proposer llm --model file.py:factory`` (a LangChain chat model; its JSON documents become the
agent's own ``Document``s in the fork), ``--verifier file.py:callable``, ``--state-key NODE=KEY``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "my_rag_agent.py"

SCRIPTED_MODEL = '''
from typing import Any
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

FIX = [{"docs": [{"id": "wiki/curie", "page_content": "Marie Curie was born in Warsaw, then part of the Russian Empire.", "metadata": {}}]}]
PROMPTS = []


class Scripted(BaseChatModel):
    """Proposes the true passage for a retrieve step whose evidence is the SEO page, nothing else."""

    temperature: float = 0.0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        prompt = str(messages[-1].content)
        PROMPTS.append(prompt)
        wanted = ('"retrieve"' in prompt or "'retrieve'" in prompt) and "seo/curie" in prompt
        import json
        text = json.dumps(FIX) if wanted else "[]"
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


def make() -> Scripted:
    return Scripted()
'''

VERIFIER = """
def says_vistula(answer):
    return None if answer is None else "vistula" in answer.lower()
"""


def cli(*args: str, cwd: Path) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "causal_middleware.cli.main", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=240,
    )
    return done.returncode, done.stdout, done.stderr


def record(tmp_path: Path) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)], cwd=tmp_path, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split("run:")[1].strip()[:10]


def test_llm_proposer_from_a_model_spec_repairs_with_the_agents_own_documents(tmp_path: Path) -> None:
    run = record(tmp_path)
    (tmp_path / "scripted_model.py").write_text(SCRIPTED_MODEL)
    graph = f"{EXAMPLE}:graph"
    code, out, err = cli(
        "repair",
        run,
        "--graph",
        graph,
        "--proposer",
        "llm",
        "--model",
        "scripted_model.py:make",
        "--json",
        "--store",
        "my_runs.db",
        cwd=tmp_path,
    )
    assert code == 0, err
    result = json.loads(out)
    assert result["status"] == "repaired", result["explanation"]
    repair = result["repair"]
    assert (repair["node"], repair["hop"], repair["source"]) == ("retrieve", 1, "llm")
    assert repair["target"] == "docs" and repair["evidence"] == ["seo/curie", "wiki/curie"]
    # the read node calls d.page_content: the fork only worked because the JSON became Documents
    assert repair["answer_after"] == "Vistula" and repair["validation"]["passed"]
    code, _, err = cli(
        "repair", run, "--graph", graph, "--proposer", "llm", "--store", "my_runs.db", cwd=tmp_path
    )
    assert code == 2 and "--model" in err


def test_verifier_and_state_key_options(tmp_path: Path) -> None:
    run = record(tmp_path)
    (tmp_path / "checks.py").write_text(VERIFIER)
    graph = f"{EXAMPLE}:graph"
    code, out, err = cli(
        "diagnose",
        run,
        "--method",
        "suffix_regen",
        "--graph",
        graph,
        "--verifier",
        "checks.py:says_vistula",
        "--state-key",
        "retrieve=docs",
        "--json",
        "--store",
        "my_runs.db",
        cwd=tmp_path,
    )
    assert code == 0, err
    diagnosis = json.loads(out)
    assert (diagnosis["node"], diagnosis["hop"]) == ("retrieve", 1)
    assert diagnosis["details"]["evidence"]["ids"][0] == "seo/curie"
    code, _, err = cli(
        "diagnose",
        run,
        "--method",
        "crs",
        "--graph",
        graph,
        "--state-key",
        "retrieve",
        "--store",
        "my_runs.db",
        cwd=tmp_path,
    )
    assert code == 2 and "NODE=KEY" in err
    code, _, err = cli(
        "diagnose",
        run,
        "--method",
        "crs",
        "--graph",
        graph,
        "--verifier",
        "checks.py:nothing",
        "--store",
        "my_runs.db",
        cwd=tmp_path,
    )
    assert code == 2 and "nothing" in err and len(err.strip().splitlines()) == 1
