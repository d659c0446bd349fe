"""The five-point verification of a generated benchmark.

1. ``tool_output_equals_source``: every node that read a workspace file (system prompt, KB search
   results and reads, skill reads) carries that file's exact text.
2. ``fault_annotation_present``: a dissatisfied trace has a fault, a root node and an expected fix;
   a control trace has none of them.
3. ``cross_references_intact``: node ids in the ground truth exist; the faulty text is in the faulty
   file; the fix's target exists (or, for CREATE, does not exist yet); the authoritative source
   exists; the correct value is stated in the session.
4. ``root_is_first_faulty_retrieval``: the root node is the first node that retrieved or used the
   faulty source (for a content gap: the first knowledge-base retrieval of the failing question).
5. ``attributions_sum_to_one``: ground-truth attributions sum to 1 +- 0.05.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from benchmarks.context.simulation.schema import Benchmark, SimTrace
from causal_middleware.context.conversation import NodeType
from causal_middleware.context.recommendation import Operation
from causal_middleware.context.text import contains
from causal_middleware.context.workspace import Workspace

CHECKS = (
    "tool_output_equals_source",
    "fault_annotation_present",
    "cross_references_intact",
    "root_is_first_faulty_retrieval",
    "attributions_sum_to_one",
)
TOLERANCE = 0.05


class CheckResult(BaseModel):
    passed: bool
    detail: str = ""


class CheckSummary(BaseModel):
    passed: int = 0
    failed: int = 0
    failures: list[str] = Field(default_factory=list, description="'trace id: why' for each failure")


class VerificationReport(BaseModel):
    domain: str
    seed: int
    n_traces: int
    checks: dict[str, CheckSummary]

    @property
    def ok(self) -> bool:
        return all(c.failed == 0 for c in self.checks.values())


class BenchmarkVerificationError(ValueError):
    """The benchmark failed its own verification; results on it would mean nothing."""


def verify_trace(trace: SimTrace, workspace: Workspace) -> dict[str, CheckResult]:
    """The five checks on one trace against the workspace it ran on."""
    return {
        "tool_output_equals_source": _outputs(trace, workspace),
        "fault_annotation_present": _annotation(trace),
        "cross_references_intact": _cross_refs(trace, workspace),
        "root_is_first_faulty_retrieval": _first_faulty(trace),
        "attributions_sum_to_one": _attributions(trace),
    }


def verify_benchmark(benchmark: Benchmark) -> VerificationReport:
    checks = {name: CheckSummary() for name in CHECKS}
    for trace in benchmark.traces:
        for name, result in verify_trace(trace, benchmark.workspace(trace)).items():
            summary = checks[name]
            if result.passed:
                summary.passed += 1
            else:
                summary.failed += 1
                summary.failures.append(f"{trace.ground_truth.trace_id}: {result.detail}")
    return VerificationReport(
        domain=benchmark.domain, seed=benchmark.seed, n_traces=len(benchmark.traces), checks=checks
    )


def _ok(detail: str = "") -> CheckResult:
    return CheckResult(passed=True, detail=detail)


def _fail(detail: str) -> CheckResult:
    return CheckResult(passed=False, detail=detail)


def _outputs(trace: SimTrace, ws: Workspace) -> CheckResult:
    checked = 0
    for n in trace.conversation.nodes:
        if n.type in (NodeType.SYSTEM_PROMPT, NodeType.SKILL_LOOKUP) or (
            n.type == NodeType.KB_RETRIEVAL and n.name == "read_kb_entry"
        ):
            if not n.source or not ws.exists(n.source):
                return _fail(f"node {n.id} read {n.source!r}, which is not in the workspace")
            if n.output != ws.read(n.source):
                return _fail(f"node {n.id} output differs from {n.source}")
            checked += 1
        for d in n.documents:
            if not d.path or not ws.exists(d.path):
                return _fail(f"node {n.id} returned {d.path!r}, which is not in the workspace")
            if d.content != ws.read(d.path):
                return _fail(f"node {n.id} document {d.path} differs from the file")
            checked += 1
    return _ok(f"{checked} outputs match their files")


def _annotation(trace: SimTrace) -> CheckResult:
    gt = trace.ground_truth
    if gt.dissatisfied:
        missing = [
            k
            for k, v in (("fault", gt.fault), ("root_node_id", gt.root_node_id), ("fix", gt.fix))
            if v is None
        ]
        return _fail("dissatisfied trace without " + ", ".join(missing)) if missing else _ok()
    present = [
        k
        for k, v in (("fault", gt.fault), ("root_node_id", gt.root_node_id), ("fix", gt.fix))
        if v is not None
    ]
    return _fail("control trace with " + ", ".join(present)) if present else _ok()


def _cross_refs(trace: SimTrace, ws: Workspace) -> CheckResult:
    gt, conv = trace.ground_truth, trace.conversation
    ids = {n.id for n in conv.nodes}
    if gt.n_nodes != len(conv.nodes):
        return _fail(f"n_nodes {gt.n_nodes} but the session has {len(conv.nodes)} nodes")
    for nid in [gt.root_node_id, *gt.attributions] if gt.root_node_id else list(gt.attributions):
        if nid not in ids:
            return _fail(f"ground truth names node {nid!r}, which is not in the session")
    if not gt.dissatisfied or gt.fault is None or gt.fix is None:
        return _ok()
    fault, fix = gt.fault, gt.fix
    if fault.faulty_path is not None:
        if not ws.exists(fault.faulty_path):
            return _fail(f"faulty path {fault.faulty_path} is not in the workspace")
        if fault.faulty_text and not contains(ws.read(fault.faulty_path), fault.faulty_text):
            return _fail(f"{fault.faulty_path} does not contain the faulty text {fault.faulty_text!r}")
    if fix.operation == Operation.CREATE:
        if ws.exists(fix.target_path):
            return _fail(f"CREATE target {fix.target_path} already exists")
    elif not ws.exists(fix.target_path):
        return _fail(f"{fix.operation} target {fix.target_path} is not in the workspace")
    if fix.authoritative_source and not ws.exists(fix.authoritative_source):
        return _fail(f"authoritative source {fix.authoritative_source} is not in the workspace")
    said = " ".join(n.text for n in conv.nodes if n.type in (NodeType.USER, NodeType.TOOL_CALL))
    if fault.category.value != "SYSTEM_PROMPT_GAP" and not contains(said, fault.correct_text):
        return _fail(f"the correct value {fault.correct_text!r} is never stated in the session")
    if not any(n.turn == fault.fault_turn and n.type == NodeType.USER for n in conv.nodes):
        return _fail(f"fault turn {fault.fault_turn} has no user turn")
    return _ok()


def _first_faulty(trace: SimTrace) -> CheckResult:
    gt, conv = trace.ground_truth, trace.conversation
    if not gt.dissatisfied or gt.fault is None:
        return _ok("control")
    fault = gt.fault
    if fault.faulty_path is not None:
        first = next((n for n in conv.nodes if fault.faulty_path in n.sources), None)
        if first is None:
            return _fail(f"no node retrieved {fault.faulty_path}")
        if (
            fault.faulty_text
            and first.type != NodeType.TOOL_CALL
            and not contains(first.output, fault.faulty_text)
            # a search's output is JSON: a value at the start of a line reads "\n23 kg" there
            and not any(contains(d.content, fault.faulty_text) for d in first.documents)
        ):
            return _fail(
                f"first node {first.id} reading {fault.faulty_path} does not carry {fault.faulty_text!r}"
            )
    else:
        first = next(
            (n for n in conv.nodes if n.type == NodeType.KB_RETRIEVAL and n.turn == fault.fault_turn), None
        )
        if first is None:
            return _fail(f"no knowledge-base retrieval in fault turn {fault.fault_turn}")
    if first.id != gt.root_node_id:
        return _fail(
            f"root is {gt.root_node_id} but the first node retrieving the faulty content is {first.id}"
        )
    return _ok()


def _attributions(trace: SimTrace) -> CheckResult:
    gt = trace.ground_truth
    if not gt.dissatisfied:
        return (
            _ok("control: no attributions")
            if not gt.attributions
            else _fail("control trace with attributions")
        )
    total = sum(gt.attributions.values())
    if abs(total - 1.0) > TOLERANCE:
        return _fail(f"attributions sum to {total:.3f}")
    if any(v < 0 for v in gt.attributions.values()):
        return _fail("negative attribution")
    return _ok(f"sum {total:.3f}")
