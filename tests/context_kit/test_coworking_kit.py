"""The second round-13 held-out example kit (examples/coworking_kit, kit ``hive_works``, written
blind to the pipeline and scored only after the round-13 freeze): it loads against its own layout
(AsciiDoc pages of an Antora site, TOML procedures, one Protocol Buffers service per tool, errors as
google.rpc.Status with BadRequest field violations), every template holds, the set it generates is
labelled, verified and deterministic, and the freeze record is well formed. Its figures are in
docs/context.md."""

from __future__ import annotations

from pathlib import Path

from benchmarks.context.kit import kit_categories, load_kit, resolve_kit
from causal_middleware.context.root_cause import FaultCategory

from .kit_checks import check_freeze_record, check_generated_set

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / "examples" / "coworking_kit" / "kit.yaml"


def test_the_kit_resolves_against_its_own_layout() -> None:
    kit = load_kit(KIT)
    r = resolve_kit(kit)
    assert kit.name == "hive_works" and kit.written and "blind" in kit.written
    assert not r.ws.layout.default and r.ws.system_prompt_path == "bot/prompt/system.txt"
    assert {f.kind for f in r.facts} == {"kb", "skill"}
    assert len(r.kb_facts) == 15 and len(r.facts) == 18 and len(r.tools) == 4 and len(r.rules) == 5
    assert set(kit_categories(r)) == set(FaultCategory)
    # procedures in TOML and tools in .proto files are read because the layout declares them
    assert r.ws.component_type("member-services/procedures/lost-fob.toml") == "skill"
    path = r.ws.tool_prompt_path("register_guest")
    assert path == "bot/grpc/hiveworks/assist/v1/register_guest.proto" and r.ws.component_type(path) == "tool"
    assert not r.ws.exists("bot/grpc/hiveworks/type/v1/member.proto")  # not declared, not read


def test_the_generated_set_is_labelled_verified_and_deterministic() -> None:
    check_generated_set(KIT)


def test_the_freeze_record_names_the_pipeline_and_the_generator() -> None:
    check_freeze_record(KIT, 53)
