"""The simulation benchmark generator and its five-point verification."""

from __future__ import annotations

from collections import Counter

import pytest

from benchmarks.context.simulation import domain_names, generate_benchmark, get_domain
from benchmarks.context.simulation.generator import dumps
from benchmarks.context.simulation.schema import TIERS
from benchmarks.context.simulation.verification import CHECKS, verify_benchmark, verify_trace
from causal_middleware.context.conversation import NodeType
from causal_middleware.context.root_cause import FaultCategory


@pytest.fixture(scope="module")
def finance():
    return generate_benchmark("finance", seed=0)


def test_default_shape(finance) -> None:
    assert len(finance.dissatisfied) == 60 and len(finance.controls) == 15
    cats = Counter(t.ground_truth.fault.category for t in finance.dissatisfied)  # type: ignore[union-attr]
    assert set(cats) == set(FaultCategory) and set(cats.values()) == {10}
    for t in finance.traces:
        lo, hi = TIERS[t.ground_truth.tier]
        assert lo <= len(t.conversation.nodes) <= hi == TIERS[t.ground_truth.tier][1]
    assert {t.ground_truth.tier for t in finance.traces} == {1, 2, 3}
    variants = {t.ground_truth.fault.variant.split("+")[0].split(":")[0] for t in finance.dissatisfied}  # type: ignore[union-attr]
    assert {"update", "announcement", "delete", "gap", "alias", "tool", "policy"} <= variants | {"skill"}


def test_verification_passes_on_every_trace(finance) -> None:
    report = verify_benchmark(finance)
    assert report.ok and set(report.checks) == set(CHECKS)
    assert all(c.passed == 75 and c.failed == 0 for c in report.checks.values())


@pytest.mark.parametrize("domain", ["healthcare_admin", "it_helpdesk", "ecommerce"])
def test_other_domains_verify(domain: str) -> None:
    bench = generate_benchmark(domain, seed=1, n_dissatisfied=18, n_control=3)
    assert verify_benchmark(bench).ok
    assert bench.domain == domain and len(bench.traces) == 21


def test_tool_outputs_are_copies_of_the_files(finance) -> None:
    for t in finance.traces[:20]:
        ws = finance.workspace(t)
        for n in t.conversation.nodes:
            if n.type in (NodeType.SKILL_LOOKUP, NodeType.SYSTEM_PROMPT):
                assert n.output == ws.read(n.source)  # type: ignore[arg-type]
            for d in n.documents:
                assert d.content == ws.read(d.path)  # type: ignore[arg-type]


def test_seeded_and_deterministic() -> None:
    a = generate_benchmark("finance", seed=3, n_dissatisfied=12, n_control=3)
    b = generate_benchmark("finance", seed=3, n_dissatisfied=12, n_control=3)
    c = generate_benchmark("finance", seed=4, n_dissatisfied=12, n_control=3)
    assert dumps(a) == dumps(b)
    assert dumps(a) != dumps(c)


def _trace(finance, category: FaultCategory):
    return next(t for t in finance.dissatisfied if t.ground_truth.fault.category == category)  # type: ignore[union-attr]


def test_verification_catches_each_kind_of_corruption(finance) -> None:
    stale = _trace(finance, FaultCategory.KB_CONTENT_STALE)
    ws = finance.workspace(stale)

    tampered = stale.model_copy(deep=True)
    for n in tampered.conversation.nodes:
        if n.documents:
            n.documents[0].content += " (edited)"
            break
    assert not verify_trace(tampered, ws)["tool_output_equals_source"].passed

    no_fault = stale.model_copy(deep=True)
    no_fault.ground_truth.fault = None
    assert not verify_trace(no_fault, ws)["fault_annotation_present"].passed

    dangling = stale.model_copy(deep=True)
    dangling.ground_truth.attributions["n999"] = 0.0
    assert not verify_trace(dangling, ws)["cross_references_intact"].passed

    wrong_root = stale.model_copy(deep=True)
    last = wrong_root.conversation.nodes[-1].id
    wrong_root.ground_truth.root_node_id = last
    wrong_root.ground_truth.attributions = {last: 1.0}
    assert not verify_trace(wrong_root, ws)["root_is_first_faulty_retrieval"].passed

    bad_sum = stale.model_copy(deep=True)
    bad_sum.ground_truth.attributions = dict.fromkeys(bad_sum.ground_truth.attributions, 0.9)
    assert not verify_trace(bad_sum, ws)["attributions_sum_to_one"].passed


def test_gap_targets_do_not_exist_and_retrieval_failures_point_elsewhere(finance) -> None:
    gap = _trace(finance, FaultCategory.KB_CONTENT_GAP)
    assert not finance.workspace(gap).exists(gap.ground_truth.fix.target_path)  # type: ignore[union-attr]
    rf = _trace(finance, FaultCategory.RETRIEVAL_FAILURE)
    assert rf.ground_truth.fault.faulty_path != rf.ground_truth.fix.target_path  # type: ignore[union-attr]


def test_domains_are_listed_and_unknown_ones_named() -> None:
    assert domain_names() == ["finance", "healthcare_admin", "it_helpdesk", "ecommerce"]
    with pytest.raises(KeyError, match="shipped domains: finance"):
        get_domain("astrology")
    with pytest.raises(ValueError, match="trace counts"):
        generate_benchmark("finance", n_dissatisfied=-1)
