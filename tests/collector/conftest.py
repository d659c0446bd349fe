"""Arize Phoenix as a real OTLP receiver, started on loopback for the collector tests.

Phoenix lives in its own venv (``make phoenix`` builds ``.venv-phoenix``) so the library's
dependencies stay clean; ``$PHOENIX_PYTHON`` points at that venv's interpreter.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT_S = 180


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _phoenix_python() -> Path:
    candidate = Path(os.environ.get("PHOENIX_PYTHON", REPO / ".venv-phoenix" / "bin" / "python"))
    if not candidate.exists():
        pytest.fail(f"Arize Phoenix venv not found at {candidate}: run `make phoenix` (make test does it)")
    return candidate


class Phoenix:
    def __init__(self, http_port: int, grpc_port: int) -> None:
        self.http_port = http_port
        self.grpc_port = grpc_port
        self.base_url = f"http://127.0.0.1:{http_port}"

    @property
    def otlp_http_endpoint(self) -> str:
        return f"{self.base_url}/v1/traces"

    @property
    def otlp_grpc_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.grpc_port}"

    def spans(self, project: str, *, expect: int, timeout_s: float = 20.0) -> list[dict]:
        """Spans of a project, waiting until at least ``expect`` have arrived."""
        deadline = time.monotonic() + timeout_s
        spans: list[dict] = []
        while time.monotonic() < deadline:
            url = f"{self.base_url}/v1/projects/{project}/spans?limit=1000"
            try:
                with urllib.request.urlopen(url, timeout=5) as resp:
                    spans = json.load(resp)["data"]
            except urllib.error.HTTPError as exc:
                if exc.code != 404:  # 404 until the project's first span arrives
                    raise
            if len(spans) >= expect:
                return spans
            time.sleep(0.25)
        return spans


@pytest.fixture(scope="session")
def phoenix() -> Iterator[Phoenix]:
    python = _phoenix_python()
    http_port, grpc_port = _free_port(), _free_port()
    workdir = tempfile.mkdtemp(prefix="phoenix-")
    env = {
        **os.environ,
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(http_port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
        "PHOENIX_WORKING_DIR": workdir,
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = open(Path(workdir) / "phoenix.log", "w")  # noqa: SIM115 - closed in teardown
    proc = subprocess.Popen(
        [str(python.parent / "phoenix"), "serve"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    server = Phoenix(http_port, grpc_port)
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                log.flush()
                tail = (Path(workdir) / "phoenix.log").read_text()[-2000:]
                pytest.fail(f"Phoenix exited with {proc.returncode} during start-up:\n{tail}")
            try:
                with urllib.request.urlopen(f"{server.base_url}/healthz", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"Phoenix did not become healthy within {STARTUP_TIMEOUT_S}s")
            time.sleep(0.5)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        shutil.rmtree(workdir, ignore_errors=True)
