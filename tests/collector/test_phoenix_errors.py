"""Bad input to the Phoenix source is a one-line error (CLI exit 2), and nothing is written.

Most of these need no Phoenix: an unreachable URL is a port nobody listens on. The unknown-project
case asks the real one (and is marked ``collector``).
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

from causal_middleware.cli.main import main
from causal_middleware.store.memory import InMemorySpanStore
from causal_middleware.store.phoenix import PhoenixError, PhoenixSpanSource


def _dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"  # closed again: connecting is refused


def _error_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("causal-mw: error: "), err
    assert "Traceback" not in err
    return lines[0]


def test_pulling_from_an_unreachable_url_is_one_line_and_creates_no_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = _dead_url()
    db = tmp_path / "never.db"
    line = _error_line(capsys, ["runs", "pull", "--phoenix", url, "--project", "p", "--store", str(db)])
    assert f"cannot reach Phoenix at {url}" in line
    assert not db.exists()


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--phoenix", "localhost:6006"], "must be an http(s) URL"),
        (["--phoenix", "http://127.0.0.1:9", "--since", "yesterday"], "--since must be an ISO 8601 time"),
        (["--phoenix", "http://127.0.0.1:9", "--limit", "0"], "--limit must be at least 1"),
    ],
)
def test_bad_pull_arguments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], expected: str
) -> None:
    db = tmp_path / "never.db"
    line = _error_line(capsys, ["runs", "pull", "--project", "p", "--store", str(db), *extra])
    assert expected in line
    assert not db.exists()


def test_write_back_checks_its_arguments_and_the_server_before_diagnosing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "absent.db")  # not even a store: the Phoenix checks come first
    base = ["diagnose", "abcdef12", "--method", "rule", "--store", db]
    assert "needs --phoenix URL" in _error_line(capsys, [*base, "--write-back", "phoenix"])
    assert "add --write-back phoenix" in _error_line(capsys, [*base, "--phoenix", "http://127.0.0.1:9"])
    url = _dead_url()
    line = _error_line(capsys, [*base, "--write-back", "phoenix", "--phoenix", url])
    assert f"cannot reach Phoenix at {url}" in line


def test_a_missing_client_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "phoenix.client", None)  # makes `import phoenix.client` fail
    with pytest.raises(PhoenixError, match=r"arize-phoenix-client.*\[phoenix\]"):
        PhoenixSpanSource("http://127.0.0.1:9").projects()


@pytest.mark.collector
@pytest.mark.xdist_group("phoenix")
def test_an_unknown_project_names_the_known_ones(phoenix: object, capsys: pytest.CaptureFixture[str]) -> None:
    url = phoenix.base_url  # type: ignore[attr-defined]
    with pytest.raises(PhoenixError) as caught:
        PhoenixSpanSource(url).pull(InMemorySpanStore(), "no-such-project")
    message = str(caught.value)
    assert "no project 'no-such-project'" in message and "default" in message and "\n" not in message


class _NotIngestedYet:
    """A Phoenix client whose span-annotation endpoint answers 404 "do not exist" ``misses``
    times (the span is still being ingested), then accepts."""

    def __init__(self, misses: int) -> None:
        self.misses = misses
        self.calls = 0
        self.spans = self

    def log_span_annotations(
        self, *, span_annotations: list[dict[str, object]], sync: bool
    ) -> list[dict[str, str]]:
        import httpx

        self.calls += 1
        if self.calls <= self.misses:
            request = httpx.Request("POST", "http://phoenix.test/v1/span_annotations")
            response = httpx.Response(
                404, request=request, text="Spans with IDs 004039b4d6aef273 do not exist."
            )
            raise httpx.HTTPStatusError("not found", request=request, response=response)
        return [{"id": f"note-{i}"} for i, _ in enumerate(span_annotations)]


def test_a_verdict_written_before_phoenix_ingested_its_span_waits_for_it() -> None:
    pytest.importorskip("httpx")
    from causal_middleware.store.phoenix import SpanAnnotation

    note = [SpanAnnotation(span_id="004039b4d6aef273", name="repair", label="repaired")]
    client = _NotIngestedYet(misses=2)
    source = PhoenixSpanSource("http://phoenix.test", client=client, span_wait_s=5.0)  # type: ignore[arg-type]
    assert source.annotate(note) == ["note-0"] and client.calls == 3
    # a span that never arrives: the same one-line error once the wait is over
    never = PhoenixSpanSource("http://phoenix.test", client=_NotIngestedYet(misses=99), span_wait_s=0.3)  # type: ignore[arg-type]
    with pytest.raises(PhoenixError, match="do not exist"):
        never.annotate(note)
