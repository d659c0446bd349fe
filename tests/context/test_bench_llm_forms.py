"""``causal-mw bench context --judge SPEC``: the LLM forms run on the same generated sessions as the
offline ones, and a model whose replies cannot be read lowers the figures (counted in
``llm_errors``) instead of stopping the benchmark."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from causal_middleware.cli.main import main

UNREADABLE_JUDGE = """
from langchain_core.language_models.fake_chat_models import FakeListChatModel

JUDGE = FakeListChatModel(responses=["I cannot tell."])  # no JSON: neither detector nor root-cause
"""


def _bench(tmp_path: Path, *extra: str) -> dict:
    out = tmp_path / f"context{len(extra)}.json"
    args = ["bench", "context", "--domain", "finance", "--only", "--n-dissatisfied", "4", "--n-control", "2"]
    assert main([*args, "--out", str(out), "--json", *extra]) == 0
    return json.loads(out.read_text())


def test_unreadable_llm_replies_are_counted_as_misses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "judge.py").write_text(UNREADABLE_JUDGE)
    offline = _bench(tmp_path)
    llm = _bench(tmp_path, "--judge", f"{tmp_path / 'judge.py'}:JUDGE")
    capsys.readouterr()
    assert offline["mode"] == "offline" and offline["llm_errors"] == 0
    assert llm["mode"] == f"llm:{tmp_path / 'judge.py'}:JUDGE"
    # every session's detector reply and every dissatisfied session's root-cause reply is unreadable
    assert llm["llm_errors"] == 6 + 4
    assert offline["acc_at_1"] > 0 and llm["acc_at_1"] == 0
    assert offline["detector"]["recall"] > 0 and llm["detector"]["recall"] == 0


def test_judge_and_kit_together_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "judge.py").write_text(UNREADABLE_JUDGE)
    code = main(["bench", "context", "--kit", "x.yaml", "--judge", f"{tmp_path / 'judge.py'}:JUDGE"])
    assert code == 2
    assert "--judge runs on the shipped domains" in capsys.readouterr().err
