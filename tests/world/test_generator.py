"""The generated world: deterministic, structurally sound, and as hard as it claims to be."""

from __future__ import annotations

import pytest

from benchmarks.models.offline_prompts import EvidenceDoc
from benchmarks.models.offline_reader import is_near_namesake, norm, statements
from benchmarks.world.generator import WorldConfig, allot_hops, generate_world
from benchmarks.world.templates import RELATIONS, parse_question
from causal_middleware.tasks.model import Dataset
from causal_middleware.tasks.scoring import contains_answer


@pytest.fixture(scope="module")
def world() -> Dataset:
    return generate_world(40, seed=7)


def test_same_seed_gives_identical_json_and_another_seed_differs():
    a = generate_world(25, seed=3).model_dump_json()
    b = generate_world(25, seed=3).model_dump_json()
    c = generate_world(25, seed=4).model_dump_json()
    assert a == b
    assert a != c


def test_hop_counts_follow_the_mix(world: Dataset):
    expected = allot_hops(40, WorldConfig().hop_mix)
    got: dict[int, int] = {}
    for q in world.questions:
        got[q.n_hops] = got.get(q.n_hops, 0) + 1
    assert got == expected
    assert set(got) == {2, 3, 4}
    only_three = generate_world(6, seed=1, hop_mix={3: 1.0})
    assert {q.n_hops for q in only_three.questions} == {3}


def test_questions_are_distinct_and_ids_unique(world: Dataset):
    assert len({q.text for q in world.questions}) == len(world.questions)
    assert len({p.id for p in world.passages}) == len(world.passages)


def test_every_hop_is_supported_by_a_passage_stating_its_answer(world: Dataset):
    passages = world.passage_map()
    for q in world.questions:
        subject = q.metadata["entities"][0]
        for hop in q.hops:
            assert hop.supporting_passage_ids, f"{q.id} hop {hop.index} has no supporting passage"
            docs = [
                EvidenceDoc(i, pid, passages[pid].title, passages[pid].text)
                for i, pid in enumerate(hop.supporting_passage_ids, start=1)
            ]
            text = " ".join(d.text for d in docs)
            assert contains_answer(text, hop.answer, hop.aliases), (q.id, hop.index, text)
            # the passage states this relation about this hop's subject (by name, alias or pronoun)
            names = {norm(subject)} | {norm(a) for a in _aliases_of(world, subject)}
            stated = [
                (rel, norm(subj), norm(obj))
                for _, _, rel, subj, obj, _, _ in statements(docs)
                if rel == hop.relation
            ]
            answers = {norm(hop.answer)} | {norm(a) for a in hop.aliases}
            assert any(s in names and o in answers for _, s, o in stated), (q.id, hop.index, stated)
            subject = hop.answer


def _aliases_of(world: Dataset, name: str) -> list[str]:
    for q in world.questions:
        for h in q.hops:
            if h.answer == name:
                return h.aliases
    for p in world.passages:
        if p.metadata.get("entity") == name and ", also known as " in p.text:
            return [p.text.split(", also known as ", 1)[1].split(",", 1)[0]]
    return []


def test_decomposition_chain_is_consistent(world: Dataset):
    for q in world.questions:
        assert q.answer == q.hops[-1].answer
        assert q.aliases == q.hops[-1].aliases
        assert [h.index for h in q.hops] == list(range(1, q.n_hops + 1))
        for k, hop in enumerate(q.hops, start=1):
            assert hop.relation in RELATIONS
            if k > 1:
                assert f"#{k - 1}" in hop.question
            if k < q.n_hops:
                assert hop.bridge_entity == hop.answer
                # the next hop's relation starts where this one ends
                assert RELATIONS[hop.relation].object == RELATIONS[q.hops[k].relation].subject
            else:
                assert hop.bridge_entity is None
        # the composed question parses back into its base entity and relation chain
        assert parse_question(q.text) == (q.metadata["entities"][0], q.metadata["relations"])


def test_distractors_aliases_and_stale_facts_exist(world: Dataset):
    passages = world.passage_map()
    roles = [p.metadata["role"] for p in world.passages]
    assert roles.count("namesake") > 20
    namesake_names = {p.metadata["entity"] for p in world.passages if p.metadata["role"] == "namesake"}
    core_names = {p.metadata["entity"] for p in world.passages if p.metadata["role"] == "core"}
    assert all(any(is_near_namesake(n, c) for c in core_names) for n in namesake_names)
    # questions carry the ids of their distractor and stale passages
    with_distractors = [q for q in world.questions if q.metadata["distractor_passage_ids"]]
    assert len(with_distractors) > len(world.questions) // 2
    stale_questions = [q for q in world.questions if q.metadata["stale_passage_ids"]]
    assert stale_questions, "no question touches a superseded dated fact"
    for q in stale_questions:
        for pid in q.metadata["stale_passage_ids"]:
            stale = passages[pid]
            assert stale.metadata.get("stale") is True and stale.date is not None
            hop = next(h for h in q.hops if h.relation == stale.metadata["relations"][0])
            current = passages[hop.supporting_passage_ids[0]]
            if current.metadata["entity"] == stale.metadata["entity"]:
                assert current.date is not None and current.date > stale.date
    # aliases: some entities are introduced with one and some hops' passages name the subject by it
    assert any(", also known as " in p.text for p in world.passages)
    assert any(q.metadata["alias_subject_hops"] for q in world.questions)
    assert any(h.aliases for q in world.questions for h in q.hops)


def test_relation_synonyms_are_used(world: Dataset):
    # founded_by is stated with several different verbs across the corpus
    verbs = {"was founded by", "established", "was started by", "is the founder of"}
    used = {v for v in verbs if any(v in p.text for p in world.passages)}
    assert len(used) >= 3


def test_padding_to_n_passages_keeps_the_questions():
    base = generate_world(12, seed=5)
    padded = generate_world(12, seed=5, n_passages=3000)
    assert len(padded.passages) == 3000
    assert [q.model_dump() for q in padded.questions] == [q.model_dump() for q in base.questions]
    padded_map = padded.passage_map()
    assert all(padded_map[p.id] == p for p in base.passages)
    assert sum(p.id.startswith("b") for p in padded.passages) == 3000 - len(base.passages)
    assert {p.metadata["role"] for p in padded.passages} >= {"core", "background"}


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(ValueError, match="n_questions"):
        generate_world(0)
    with pytest.raises(ValueError, match="smaller than"):
        generate_world(10, seed=0, n_passages=10)
    with pytest.raises(ValueError, match="hop count"):
        generate_world(5, hop_mix={9: 1.0})
    with pytest.raises(ValueError, match="negative"):
        generate_world(5, hop_mix={2: -1.0, 3: 1.0})


def test_save_and_load_round_trip(tmp_path, world: Dataset):
    for name in ("world.json", "world.json.gz"):
        path = world.save(tmp_path / name)
        assert Dataset.load(path) == world
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "x"')
    with pytest.raises(ValueError, match="bad.json"):
        Dataset.load(bad)
    with pytest.raises(FileNotFoundError):
        Dataset.load(tmp_path / "missing.json")
