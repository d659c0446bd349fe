"""Contrastive pairs: TRL DPO / reward JSONL, loaded back with ``datasets``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from datasets import load_dataset
from repair_fakes import ScriptedProposer
from repair_sim import World

from causal_middleware.counterfactual.verifiers import ReferenceVerifier
from causal_middleware.repair.models import RepairResult
from causal_middleware.repair.pairs import build_pair, export_pairs, pairs_from_records, write_pairs
from causal_middleware.repair.service import repair_run


def _repaired(world: World) -> RepairResult:
    run = world.backend.run()
    proposer = ScriptedProposer({("read", 1): [{"fact": "Bob Smith"}]})
    result = repair_run(
        run, backend=world.backend, proposer=proposer, verifier=ReferenceVerifier(), store=world.backend.store
    )
    assert result.status == "repaired"
    return result


def test_pair_is_the_step_context_with_repaired_and_original_outputs(sloppy_world: World) -> None:
    result = _repaired(sloppy_world)
    pair = result.pair
    assert pair is not None
    assert json.loads(pair.chosen) == {"fact": "Bob Smith"}
    assert json.loads(pair.rejected) == {"fact": "Rob Smith"}
    assert "Question: Where was the founder of Acme Corp born?" in pair.prompt
    assert "Who founded Acme Corp?" in pair.prompt  # earlier steps are context
    assert '"fact": "Rob Smith"' not in pair.prompt  # the step's own (wrong) output is not
    assert "[read | hop 1" not in pair.prompt
    assert "'read' step (hop 1)" in pair.prompt
    meta = pair.metadata
    assert meta["run_id"] == result.run_id and meta["node"] == "read" and meta["crs"] == 1.0
    assert meta["validation"]["passed"] is True and meta["validation"]["llm_ran"] is False
    trajectory = sloppy_world.backend.store.get_trajectory(result.run_id)
    assert result.repair is not None
    with pytest.raises(ValueError, match="repair is for run"):
        build_pair(trajectory.model_copy(update={"run_id": "b" * 32}), result.repair)


def test_dpo_jsonl_loads_with_datasets(sloppy_world: World, tmp_path: Path) -> None:
    first = _repaired(sloppy_world)
    second = _repaired(sloppy_world)
    assert first.pair is not None and second.pair is not None
    path = tmp_path / "pairs.jsonl"
    assert write_pairs([first.pair, second.pair], path, "dpo") == 2
    ds = load_dataset("json", data_files=str(path), split="train")
    assert ds.num_rows == 2
    assert {"prompt", "chosen", "rejected", "metadata"} <= set(ds.column_names)
    assert ds[0]["prompt"] == first.pair.prompt and ds[0]["chosen"] == first.pair.chosen
    assert ds[1]["metadata"]["run_id"] == second.run_id
    assert ds[0]["metadata"]["validation"]["flips"] == 3


def test_reward_jsonl_is_implicit_prompt_chosen_rejected(sloppy_world: World, tmp_path: Path) -> None:
    result = _repaired(sloppy_world)
    assert result.pair is not None
    path = tmp_path / "reward.jsonl"
    write_pairs([result.pair], path, "reward")
    ds = load_dataset("json", data_files=str(path), split="train")
    assert "prompt" not in ds.column_names
    row = ds[0]
    assert row["chosen"] == result.pair.prompt + "\n" + result.pair.chosen
    assert row["rejected"].endswith(result.pair.rejected)
    with pytest.raises(ValueError, match="unknown pair format"):
        write_pairs([result.pair], path, "sft")  # type: ignore[arg-type]


def test_export_from_store_keeps_validated_repairs_only(sloppy_world: World, tmp_path: Path) -> None:
    result = _repaired(sloppy_world)
    store = sloppy_world.backend.store
    failing = sloppy_world.backend.run()
    repair_run(
        failing,
        backend=sloppy_world.backend,
        proposer=ScriptedProposer({}),
        verifier=ReferenceVerifier(),
        store=store,
    )
    assert len(store.get_records("repair")) == 2
    path = tmp_path / "out.jsonl"
    assert export_pairs(store, path) == 1
    [line] = path.read_text().splitlines()
    assert json.loads(line)["metadata"]["run_id"] == result.run_id
    # an unvalidated repair is kept only when asked for
    record = result.model_dump(mode="json")
    record["repair"]["validation"]["passed"] = False
    assert pairs_from_records([record]) == []
    assert len(pairs_from_records([record], validated_only=False)) == 1
