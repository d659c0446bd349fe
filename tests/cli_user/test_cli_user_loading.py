"""Loading a user's graph (``--graph file.py:attr``) and verifier (``load_verifier``): sibling
modules import, module paths work, a file that raises is a one-line error (exit 2 from the CLI)."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from causal_middleware.integrations.langgraph.replayer import load_graph
from langgraph.pregel import Pregel

from causal_middleware.cli._common import load_verifier
from causal_middleware.cli.main import main
from causal_middleware.counterfactual.verifiers import as_verifier
from causal_middleware.spans.model import Trajectory


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


# --- load_graph ------------------------------------------------------------------------------
def test_a_graph_file_imports_its_sibling_modules(user_agent: Path, monkeypatch) -> None:
    monkeypatch.chdir(user_agent.parent.parent)  # not the agent's folder: only the loader adds it
    assert str(user_agent.parent) not in sys.path
    graph = load_graph(f"{user_agent}:graph")
    assert isinstance(graph, Pregel) and graph.name == "capitals"
    out = graph.invoke({"question": "Capital of Italy?"}, {"configurable": {"thread_id": "s"}})
    assert out["answer"] == "Rome"  # capitals_data (the sibling) was imported and used
    assert isinstance(load_graph(f"{user_agent}:build"), Pregel)  # a factory in the same file


def test_a_module_path_still_works(user_agent: Path, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(user_agent.parent))
    assert isinstance(load_graph("agent:graph"), Pregel)


def test_a_file_that_raises_on_import_is_a_one_line_value_error(tmp_path: Path) -> None:
    bad = _write(tmp_path / "bad", "agent.py", "import os\nraise RuntimeError('no API key\\nconfigured')\n")
    with pytest.raises(ValueError) as info:
        load_graph(f"{bad}:graph")
    message = str(info.value)
    assert "\n" not in message and str(bad) in message and "RuntimeError: no API key configured" in message
    missing_sibling = _write(tmp_path / "ms", "agent.py", "import not_a_sibling_xyz\n")
    with pytest.raises(ValueError, match="ModuleNotFoundError: No module named 'not_a_sibling_xyz'"):
        load_graph(f"{missing_sibling}:graph")
    syntax = _write(tmp_path / "syn", "agent.py", "def broken(:\n")
    with pytest.raises(ValueError, match="SyntaxError") as info:
        load_graph(f"{syntax}:graph")
    assert "\n" not in str(info.value)
    factory = _write(tmp_path / "fac", "agent.py", "def build():\n    raise KeyError('model')\n")
    with pytest.raises(ValueError, match="graph factory .* failed: KeyError"):
        load_graph(f"{factory}:build")


def test_replay_with_a_broken_graph_file_exits_2_with_one_line(recorded, tmp_path: Path, capsys) -> None:
    bad = _write(tmp_path / "bad", "agent.py", "raise ImportError('langchain_openai is not installed')\n")
    code = main(
        ["replay", recorded["right"], "--graph", f"{bad}:graph", "--hop", "1", "--store", recorded["store"]]
    )
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("causal-mw: error: importing graph file") and str(bad) in err
    assert "ImportError: langchain_openai is not installed" in err
    code = main(["replay", recorded["right"], "--graph", f"{tmp_path / 'none.py'}:graph", "--hop", "1"])
    out, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "does not exist" in err


def test_replay_loads_a_graph_file_with_siblings_from_the_cli(recorded, capsys) -> None:
    """In a fresh import state (the recording's modules dropped), the CLI's --graph imports the
    file and its sibling itself."""
    for name in [n for n in sys.modules if n.startswith("_causal_user_") or n == "capitals_data"]:
        del sys.modules[name]
    sys.path[:] = [p for p in sys.path if p != str(recorded["agent"].parent)]
    argv = ["replay", recorded["wrong"][:8], "--graph", f"{recorded['agent']}:graph", "--hop", "2"]
    code = main([*argv, "--set", '{"capitals": ["Paris", "Madrid"]}', "--store", recorded["store"], "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["answer"] == "Paris and Madrid"


# --- load_verifier ---------------------------------------------------------------------------
def test_load_verifier_from_a_file_with_a_sibling(tmp_path: Path) -> None:
    folder = tmp_path / "checks"
    _write(folder, "gold_answers.py", "GOLD = {'paris and madrid'}\n")
    spec = _write(
        folder,
        "verify.py",
        """
        from gold_answers import GOLD

        def is_right(answer):
            if answer is None:
                return None
            return answer.strip().lower() in GOLD

        class Holder:
            check = staticmethod(is_right)
        """,
    )
    verifier = load_verifier(f"{spec}:is_right")
    assert verifier("Paris and Madrid") is True and verifier("Paris and Rome") is False
    assert verifier(None) is None
    assert load_verifier(f"{spec}:Holder.check")("paris and madrid") is True  # dotted attribute
    verdict = as_verifier(verifier).verify(Trajectory(run_id="r" * 32, answer="Paris and Rome"))
    assert verdict.success is False


def test_load_verifier_from_a_module_and_on_the_trajectory(tmp_path: Path, monkeypatch) -> None:
    assert load_verifier("os.path:isabs")("/etc") is True
    folder = tmp_path / "pkg_checks"
    _write(
        folder,
        "traj_check_xyz.py",
        """
        from causal_middleware.spans.model import Trajectory

        def no_errors(trajectory: Trajectory) -> bool:
            return trajectory.error is None and trajectory.answer is not None
        """,
    )
    monkeypatch.syspath_prepend(str(folder))
    verifier = load_verifier("traj_check_xyz:no_errors")
    wrapped = as_verifier(verifier)
    assert getattr(wrapped, "on", None) == "trajectory"
    assert wrapped.verify(Trajectory(run_id="a" * 32, answer="x")).success is True
    assert wrapped.verify(Trajectory(run_id="a" * 32, answer=None)).success is False


def test_load_verifier_returns_a_verifier_object_unchanged(tmp_path: Path) -> None:
    spec = _write(
        tmp_path / "v",
        "obj.py",
        """
        class Always:
            def verify(self, trajectory):
                raise AssertionError("not called here")

        VERIFIER = Always()
        """,
    )
    obj: Any = load_verifier(f"{spec}:VERIFIER")
    assert type(obj).__name__ == "Always" and as_verifier(obj) is obj


@pytest.mark.parametrize(
    "body, attr, message",
    [
        ("LIMIT = 3\n", "LIMIT", "is a int, not a function"),
        ("class Check:\n    pass\n", "Check", "is a class"),
        ("def two(a, b):\n    return True\n", "two", "must take one argument"),
        ("def zero():\n    return True\n", "zero", "must take one argument"),
        ("raise ValueError('bad config')\n", "anything", "ValueError: bad config"),
        ("X = 1\n", "missing", "has no attribute 'missing'"),
    ],
)
def test_load_verifier_bad_specs_are_one_line_value_errors(tmp_path: Path, body, attr, message) -> None:
    spec = _write(tmp_path / "bad", "verifier.py", body)
    with pytest.raises(ValueError) as info:
        load_verifier(f"{spec}:{attr}")
    assert message in str(info.value) and "\n" not in str(info.value)


def test_load_verifier_spec_shapes() -> None:
    with pytest.raises(ValueError, match="must look like 'path/to/file.py:callable'"):
        load_verifier("no_colon")
    with pytest.raises(ValueError, match="cannot import module 'no_such_module_xyz'"):
        load_verifier("no_such_module_xyz:check")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_verifier("missing/verify.py:check")
