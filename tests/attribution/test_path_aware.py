"""path_aware: provenance, the evidence audit, probes chosen by fault path, uncertainty."""

from __future__ import annotations

import pytest
from attribution_sim import World, context_for, faulted_run, inject, make_world

from benchmarks.suites.fp_report import FPUnit, build_results
from causal_middleware.attribution import DiagnosisContext, get_diagnoser
from causal_middleware.attribution.path_aware import recorded_query_context
from causal_middleware.faults.model import FaultLabel
from causal_middleware.spans.model import Trajectory
from causal_middleware.tasks.model import HopGold, Question
from causal_middleware.tasks.scoring import is_correct

FAMILIES = (
    "empty_retrieval",
    "irrelevant_documents",
    "false_premise",
    "stale_evidence",
    "content_corruption",
)


@pytest.fixture(scope="module")
def shared() -> tuple[World, Trajectory]:
    """One world and one successful base run for the non-persistent faults (they leave the world as is)."""
    world = make_world()
    return world, world.backend.run(world.questions["q0-3"])


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("hop", [1, 2, 3])
def test_right_hop_with_one_probe_chosen_by_path(shared, family: str, hop: int) -> None:
    world, base = shared
    run = inject(world, base, family, hop)
    d = get_diagnoser("path_aware").diagnose(run, context_for(world))
    assert (d.hop, d.stage, d.uncertain, d.candidates) == (hop, "retrieval", False, [hop])
    assert d.cost.reexecutions == 1 and d.probes[0].restored is True
    # the probe follows the path: nothing downstream depends on the last hop -> frozen suffix
    assert d.probes[0].mode == ("frozen" if hop == 3 else "regenerate")
    assert d.details["confirmed"] is True and d.cost.retrievals >= len(run.hops)
    assert d.step_scores[f"hop:{hop}"] == 1.0


def test_without_the_audit_provenance_alone_finds_bridge_faults(world) -> None:
    run = faulted_run(world, "content_corruption", 1)  # the agent ends with "unknown"
    d = get_diagnoser("path_aware", audit=False).diagnose(run, context_for(world))
    assert d.hop == 1 and d.details["path"] == "bridge" and d.propagation is True
    assert d.details["audit"] is None
    reasons = " ".join(s["reasons"][0] for s in d.details["suspects"])
    assert "searched for ['holdings', 'quintar']" in reasons


def test_corruption_into_another_real_entity_escalates_along_the_bridge() -> None:
    """Hop 2's founder is corrupted into a near-namesake that exists: hop 3 finds evidence about
    it and the run answers its birthplace. Provenance points at hop 3; its probes fail, so the
    blame moves to hop 2, which produced the entity hop 3 searched for, and that probe restores."""
    world = make_world(sloppy=True)
    run = faulted_run(world, "content_corruption", 2, corrupt_to="Mira Vell")
    assert run.answer == "Osk"
    d = get_diagnoser("path_aware", audit=False).diagnose(run, context_for(world))
    assert d.hop == 2 and not d.uncertain
    assert [(p.hop, p.mode, p.restored) for p in d.probes] == [
        (3, "frozen", False),
        (3, "regenerate", False),
        (2, "regenerate", True),
    ]
    with_audit = get_diagnoser("path_aware").diagnose(run, context_for(world))
    assert with_audit.hop == 2 and with_audit.cost.reexecutions == 1


def test_persistent_corruption_is_confirmed_by_repairing_the_reading() -> None:
    """The corpus itself is corrupted: the audit sees nothing and no re-retrieval can restore the
    answer (it finds the same passage again: no fork, the hop is not cleared). The reading repair
    (hop 1's fact set to its gold answer) restores it, so hop 1 is confirmed, not left uncertain."""
    world = make_world()
    run = faulted_run(world, "content_corruption", 1, persistent=True)
    d = get_diagnoser("path_aware").diagnose(run, context_for(world))
    assert d.details["audit"]["hops"][1]["consistent"] is True
    evidence = [p for p in d.probes if p.target == "evidence"]
    assert not any(p.restored for p in evidence)
    hop1 = [p for p in evidence if p.hop == 1]
    assert hop1 and all(p.uninformative and p.fork_run_id is None for p in hop1)
    reading = [p for p in d.probes if p.target == "reading"]
    assert [(p.hop, p.restored) for p in reading] == [(1, True)]
    assert reading[0].fact == world.questions["q0-3"].hops[0].answer and reading[0].fork_run_id
    assert (d.hop, d.uncertain, d.candidates) == (1, False, [1])
    assert d.details["reading_confirmed"] == 1 and d.uses_gold
    assert "setting it right" in d.root_cause

    # without reading probes the corrupted corpus leaves the bridge hop uncertain, as before
    plain = get_diagnoser("path_aware", max_reading_probes=0).diagnose(run, context_for(world))
    assert plain.hop == 1 and plain.uncertain and len(plain.candidates) > 1
    assert not any(p.target == "reading" for p in plain.probes)
    # no probe confirmed anything: the diagnosis names where the run first left the gold path
    assert plain.details["first_misread"] == 1 and plain.uses_gold and plain.details["confirmed"] is False


def test_reading_probes_skip_hops_that_read_their_gold_answer_and_dead_ends() -> None:
    """Only hops whose reading is not their gold answer are probed, earliest first; a hop that
    already read the gold answer would run a fork that changes nothing."""
    world = make_world()
    run = faulted_run(world, "content_corruption", 2, persistent=True)
    d = get_diagnoser("path_aware").diagnose(run, context_for(world))
    reading = [p for p in d.probes if p.target == "reading"]
    assert reading and reading[0].hop == 2 and reading[0].restored is True
    assert all(p.hop != 1 for p in reading)
    assert d.hop == 2 and not d.uncertain


def test_reading_probes_need_the_gold_decomposition() -> None:
    world = make_world()
    run = faulted_run(world, "content_corruption", 1, persistent=True)
    # the same judge, no gold decomposition: evidence probes run, reading probes cannot
    ctx = recorded_query_context(context_for(world))
    assert ctx.question is None and ctx.can_judge()
    d = get_diagnoser("path_aware").diagnose(run, ctx)
    assert d.probes and all(p.target == "evidence" for p in d.probes)
    assert d.uncertain


def test_passive_mode_without_a_live_agent(world) -> None:
    run = faulted_run(world, "stale_evidence", 2)
    d = get_diagnoser("path_aware").diagnose(run, DiagnosisContext(index=world.index))
    assert d.ran and d.hop == 2 and d.details["probed"] is False and d.cost.reexecutions == 0
    assert d.uncertain is False  # an unrivalled audit finding stands without a probe
    bare = get_diagnoser("path_aware").diagnose(run, DiagnosisContext())
    assert bare.ran and bare.hop == 2 and bare.details["audit"] is None


def test_uncertainty_when_no_signal_separates_hops(world) -> None:
    """A wrong answer copied from nowhere, with clean evidence everywhere: nothing points at a hop."""
    run = world.backend.run(world.questions["q0-3"]).model_copy(update={"answer": "unknown"})
    d = get_diagnoser("path_aware").diagnose(run, DiagnosisContext(index=world.index))
    assert d.hop is None and d.stage == "answer" and d.uncertain


@pytest.fixture(scope="module")
def sweep() -> dict:
    """A small benchmark: 5 families x depths 1-3 on the simulated agent."""
    names = ["path_aware", "frozen_hop", "suffix_regen", "coverage"]
    units = []
    for qid in ("q1-3",):
        world = make_world()
        question = world.questions[qid]
        base = world.backend.run(question)
        for family in FAMILIES:
            for hop in (1, 2, 3):
                run = inject(world, base, family, hop)
                recovered = is_correct(run.answer, question)
                diagnoses = {}
                if not recovered:
                    ctx = context_for(world, qid)
                    diagnoses = {n: get_diagnoser(n).diagnose(run, ctx) for n in names}
                units.append(
                    FPUnit(
                        label=FaultLabel(**run.labels["fault"]),
                        recovered=recovered,
                        diagnoses=diagnoses,
                        n_hops=len(run.hops),
                    )
                )
    return build_results(units, names, {"world": "attribution-sim"}, B=200)


def test_sweep_path_aware_is_accurate_at_every_depth_and_cheaper(sweep: dict) -> None:
    pa = sweep["diagnosers"]["path_aware"]
    assert sweep["failed"] == {"1": 5, "2": 5, "3": 5}
    for depth in ("1", "2", "3"):
        assert pa["by_depth"][depth]["acc"] >= 0.8
    assert pa["reexec_per_correct"] < sweep["diagnosers"]["frozen_hop"]["reexec_per_correct"]
    assert pa["reexec_per_correct"] < sweep["diagnosers"]["suffix_regen"]["reexec_per_correct"]
    cov = sweep["diagnosers"]["coverage"]["by_depth"]
    assert cov["1"]["acc"] == 1.0 and cov["2"]["acc"] == 0.0 and cov["3"]["acc"] == 0.0
    vs_cov = next(
        m for m in sweep["mcnemar"] if m["depth"] == "all" and {m["a"], m["b"]} == {"path_aware", "coverage"}
    )
    assert (vs_cov["a_only"], vs_cov["b_only"]) == (10, 0) and vs_cov["p_value"] < 0.01


def test_probe_k_comes_from_the_hops_the_audit_trusts(world) -> None:
    """A fault that plants a passage on top of the retriever's k leaves its hop with k + 1
    documents; the probe re-retrieves k passages (what the audit-consistent hops recorded)."""
    from attribution_sim import _evidence_at

    from causal_middleware.attribution.path_aware import trusted_k

    base = world.backend.run(world.questions["q0-3"])
    evidence = _evidence_at(world, base.run_id, 2)
    planted = {
        "id": "premise-x",
        "text": "It is well established that Quanta Works was founded by Mira Vell.",
    }
    run = world.backend.fork(
        base.run_id, hop=2, node="retrieve", values={"evidence": [planted, *evidence]}, mode="regenerate"
    )
    assert len(run.hop(2).documents) == len(evidence) + 1 == 4
    d = get_diagnoser("path_aware").diagnose(run, context_for(world))
    assert d.hop == 2 and d.details["repair_k"] == 3
    assert [p.n_documents for p in d.probes] == [3] * len(d.probes)
    assert d.details["audit"]["hops"][2]["consistent"] is False
    # an explicit repair_k still wins, and without an audit nothing is trusted
    explicit = get_diagnoser("path_aware").diagnose(run, context_for(world, repair_k=5))
    assert "repair_k" not in explicit.details and explicit.probes[0].n_documents == 5
    assert trusted_k([], None) is None


def test_a_hop_the_audit_flags_is_repaired_with_its_own_recorded_query(world) -> None:
    """The audit says hop 2's evidence is not what the index returns for hop 2's own sub-query, so
    the probe undoes exactly that (the index's answer to the recorded sub-query, no gold needed);
    without the audit the probe takes the gold sub-question."""
    from causal_middleware.attribution.path_aware import recorded_query_context

    run = faulted_run(world, "false_premise", 2)
    d = get_diagnoser("path_aware").diagnose(run, context_for(world))
    assert d.hop == 2 and d.details["suspects"][0]["audited"] is True
    assert (d.probes[0].sub_query_source, d.probes[0].sub_query) == ("recorded", run.hop(2).sub_query)
    assert d.probes[0].restored is True and d.uses_gold is False
    blind = get_diagnoser("path_aware", audit=False).diagnose(run, context_for(world))
    assert blind.probes and all(p.sub_query_source == "gold" for p in blind.probes)

    ctx = recorded_query_context(context_for(world))
    question = world.questions["q0-3"]
    assert ctx.question is None and ctx.backend is world.backend
    right = run.model_copy(update={"answer": question.answer.upper()})
    assert ctx.judge(right) is True and ctx.judge(run.model_copy(update={"answer": "Osk"})) is False
    bare = DiagnosisContext(reference="Lostra")
    assert recorded_query_context(bare) is bare


def test_a_reading_repair_that_sets_the_chain_right_is_told_apart_from_one_that_does_not() -> None:
    """``_cured_downstream``: the gold hops after the repaired one that the failed run read wrong
    and the fork read right (here the clean run stands in for the fork of a perfect repair)."""
    from causal_middleware.attribution.hops import hop_views
    from causal_middleware.attribution.path_aware import _cured_downstream

    world = make_world()
    question = world.questions["q0-3"]
    base = world.backend.run(question)
    run = faulted_run(world, "content_corruption", 1, persistent=True)
    views = hop_views(run)
    # hop 1 read a wrong organisation, and hops 2-3 re-queried its founder in vain
    assert [v.fact for v in views] == ["Quintar Holdings", "", ""]
    assert _cured_downstream(views, base, question, views[0]) == [2, 3]
    assert _cured_downstream(views, base, question, views[1]) == [3]  # gold hop 2 is its own
    assert _cured_downstream(views, run, question, views[0]) == []  # a fork as wrong as the run


def test_a_later_restoring_repair_does_not_clear_an_earlier_hop_no_probe_could_change(monkeypatch) -> None:
    """Hop 1's corpus passage states a wrong bridge entity, so re-retrieving it is uninformative.
    If a later hop's evidence repair restores the answer anyway (its gold evidence overrode the
    wrong entity), hop 1 was never tested: its reading is repaired first, and it restores."""
    from causal_middleware.attribution.path_aware import PathAwareDiagnoser, Suspect

    world = make_world()
    run = faulted_run(world, "content_corruption", 1, persistent=True)
    original = PathAwareDiagnoser._probe

    def later_repair_restores(self, runner, *args, **kwargs):
        _, ruled_out = original(self, runner, *args, **kwargs)
        assert any(r.hop == 1 and r.uninformative for r in runner.records)
        last = runner.records[-1]
        runner.records.append(last.model_copy(update={"hop": 3, "restored": True, "uninformative": False}))
        return Suspect(hop=3, strength=2.0, path="evidence", reasons=["hop 3's gold evidence"]), ruled_out

    monkeypatch.setattr(PathAwareDiagnoser, "_probe", later_repair_restores)
    d = get_diagnoser("path_aware").diagnose(run, context_for(world))
    assert d.hop == 1 and d.details["overrides_evidence_repair_at"] == 3
    assert [(p.hop, p.restored) for p in d.probes if p.target == "reading"] == [(1, True)]

    # without reading probes the later repair stands
    plain = get_diagnoser("path_aware", max_reading_probes=0).diagnose(run, context_for(world))
    assert plain.hop == 3 and "overrides_evidence_repair_at" not in plain.details


def test_a_later_restoring_repair_stands_when_every_earlier_hop_was_tested(monkeypatch) -> None:
    """A fault at hop 2 whose hop-1 evidence probe ran (informative): no reading probe is added."""
    from causal_middleware.attribution.path_aware import PathAwareDiagnoser, Suspect

    world = make_world()
    run = faulted_run(world, "stale_evidence", 2)
    original = PathAwareDiagnoser._probe

    def confirm_hop_2(self, runner, *args, **kwargs):
        _, ruled_out = original(self, runner, *args, **kwargs)
        assert not any(r.uninformative for r in runner.records)
        last = runner.records[-1]
        runner.records.append(last.model_copy(update={"hop": 2, "restored": True}))
        return Suspect(hop=2, strength=2.0, path="evidence", reasons=["hop 2"]), ruled_out

    monkeypatch.setattr(PathAwareDiagnoser, "_probe", confirm_hop_2)
    d = get_diagnoser("path_aware").diagnose(run, context_for(world))
    assert d.hop == 2 and not any(p.target == "reading" for p in d.probes)
    assert "overrides_evidence_repair_at" not in d.details


class _ReadingRunner:
    """Just enough of a ProbeRunner for the reading stage: records which hops it is asked to set."""

    def __init__(self, question, text: str, restores: int) -> None:
        from types import SimpleNamespace

        from causal_middleware.attribution.base import ProbeRecord

        self.context = SimpleNamespace(question=question, adapter=object())
        self.trajectory = SimpleNamespace(input=text)
        self.forks: dict = {}
        self.asked: list[int] = []
        self._restores, self._record = restores, ProbeRecord

    def probe_reading(self, hop: int, mode: str):
        self.asked.append(hop)
        return self._record(hop=hop, mode=mode, target="reading", restored=hop == self._restores, fact="x")


def _mayor_chain() -> tuple:
    from causal_middleware.attribution.hops import HopView
    from causal_middleware.tasks.model import HopGold, Question

    question = Question(
        id="q",
        text="Who is the mayor of the city where Rona Konani's employer is headquartered?",
        answer="Poutrail Horakhou",
        hops=[
            HopGold(
                index=1, question="Which organisation does Rona Konani work for?", answer="Toudruv Institute"
            ),
            HopGold(index=2, question="Where is #1 headquartered?", answer="Saishorshaim", aliases=["Kano"]),
            HopGold(index=3, question="Who is the mayor of #2?", answer="Poutrail Horakhou"),
        ],
    )
    first = [
        HopView(index=1, sub_query="Which organisation does Rona Konani work for?", fact="Toudruv Institute"),
        HopView(index=2, sub_query="Where is Toudruv Institute headquartered?", fact="Saishorshaim"),
    ]
    return question, first, HopView


@pytest.mark.parametrize(
    ("alias", "expected"),
    [
        ("Paisin", [3]),  # the retry searched for a false alias hop 3's note made up: hop 3 carries it
        ("Kano", [4]),  # the retry searched for a true alias: it supersedes hop 3's attempt
    ],
)
def test_a_retry_supersedes_its_attempt_only_when_it_searched_the_right_entity(alias: str, expected) -> None:
    from causal_middleware.attribution.path_aware import PathAwareDiagnoser

    question, views, HopView = _mayor_chain()
    views += [
        HopView(
            index=3,
            sub_query="Who is the mayor of Saishorshaim?",
            fact=f"FACT: NONE\nNOTE: Saishorshaim is also known as {alias}",
        ),
        HopView(index=4, sub_query=f"Who is the mayor of {alias}?", fact="Nouma Graja"),
    ]
    runner = _ReadingRunner(question, question.text, restores=expected[0])
    found = PathAwareDiagnoser()._probe_readings(runner, views, 4, set(), {})
    assert runner.asked == expected and found is not None and found.hop == expected[0]


def test_a_hop_aligned_to_another_gold_hop_is_not_a_retry_of_its_source() -> None:
    """A question that asks the same relation twice: hop 2 (a search for hop 1's true alias)
    aligns to gold hop 3, not to hop 1's gold hop, so it does not make hop 1 a misled attempt."""
    from causal_middleware.attribution.hops import HopView
    from causal_middleware.attribution.path_aware import PathAwareDiagnoser
    from causal_middleware.tasks.model import HopGold, Question

    question = Question(
        id="q",
        text="Which organisation does the founder of the employer of Mefu Jakbemfi work for?",
        answer="Toudruv Institute",
        hops=[
            HopGold(
                index=1,
                question="Which organisation does Mefu Jakbemfi work for?",
                answer="Pikstebus College",
            ),
            HopGold(index=2, question="Who founded #1?", answer="Rona Konani"),
            HopGold(index=3, question="Which organisation does #2 work for?", answer="Toudruv Institute"),
        ],
    )
    views = [
        HopView(
            index=1,
            sub_query="Which organisation does Mefu Jakbemfi work for?",
            fact="FACT: NONE\nNOTE: Mefu Jakbemfi is also known as Brethaik",
        ),
        HopView(index=2, sub_query="Which organisation does Brethaik work for?", fact="FACT: NONE"),
        HopView(index=3, sub_query="Mefu Jakbemfi employer employed works for", fact="FACT: NONE"),
        HopView(index=4, sub_query="Brethaik employer employed works for", fact="Pikstebus College"),
    ]
    runner = _ReadingRunner(question, question.text, restores=0)
    PathAwareDiagnoser()._probe_readings(runner, views, 4, set(), {})
    assert 1 not in runner.asked


@pytest.mark.parametrize(
    ("fork_hop_2", "expected"),
    [
        # the fork's hop 2 searched for hop 1's repaired entity (and misread what it found): the
        # repair set the chain right, so hop 1 is the root and hop 2's repair only bypassed it
        ("Where is Toudruv Institute headquartered?", 1),
        # the fork's hop 2 still searched for another entity: hop 1's repair did not carry
        ("Where is Quintar Holdings headquartered?", 2),
    ],
)
def test_an_earlier_reading_repair_that_set_the_next_search_right_is_the_root(
    monkeypatch: pytest.MonkeyPatch, fork_hop_2: str, expected: int
) -> None:
    """A fault at hop 1 made it read a wrong organisation, so hop 2 searched for that one. Setting
    hop 1's reading right does not restore the answer (the small reader then misreads hop 2 on
    clean evidence), setting hop 2's does: a hop-2 verdict would blame a hop that only ever
    searched for what hop 1 handed it."""
    import causal_middleware.attribution.path_aware as path_aware
    from causal_middleware.attribution.hops import HopView

    question, _, _ = _mayor_chain()
    question = question.model_copy(update={"hops": question.hops[:2], "answer": "Saishorshaim"})
    views = [
        HopView(index=1, sub_query="Which organisation does Rona Konani work for?", fact="Quintar Holdings"),
        HopView(index=2, sub_query="Where is Quintar Holdings headquartered?", fact="Lostra"),
    ]
    fork_views = [
        HopView(index=1, sub_query=views[0].sub_query, fact="Toudruv Institute"),
        HopView(index=2, sub_query=fork_hop_2, fact="Kalemba"),
    ]
    fork = object()
    real = path_aware.hop_views
    monkeypatch.setattr(path_aware, "hop_views", lambda t: fork_views if t is fork else real(t))

    runner = _ReadingRunner(question, question.text, restores=2)
    runner.forks = {"f1": fork}
    asked = runner.probe_reading
    runner.probe_reading = lambda hop, mode: (  # type: ignore[method-assign]
        asked(hop, mode).model_copy(update={"fork_run_id": "f1"}) if hop == 1 else asked(hop, mode)
    )
    found = path_aware.PathAwareDiagnoser()._probe_readings(runner, views, 2, set(), {})
    assert runner.asked == [1, 2]
    assert found is not None and found.hop == expected
    assert ("search for their right entity" in found.reasons[0]) == (expected == 1)


@pytest.mark.parametrize(
    ("hop_1_fact", "expected"),
    [
        # a reader that answers in sentences hands hop 2 the right entity amid more words: the
        # gold sub-question keeps the entity and drops the words, so hop 2 stays blamed
        ("Stevleshi Songs was written by Jevo Kajanou.", 2),
        # hop 1 read another person: the repair replaced the entity hop 2 searched for
        ("Stevleshi Songs was written by Mara Voss.", 1),
    ],
)
def test_a_repair_that_only_dropped_words_around_the_right_entity_does_not_move_the_blame(
    hop_1_fact: str, expected: int
) -> None:
    from types import SimpleNamespace

    from causal_middleware.attribution.base import ProbeRecord
    from causal_middleware.attribution.hops import HopView
    from causal_middleware.attribution.path_aware import PathAwareDiagnoser, Suspect
    from causal_middleware.attribution.provenance import bridge_links
    from causal_middleware.tasks.model import HopGold, Question

    question = Question(
        id="q",
        text="Where was the creator of Stevleshi Songs born?",
        answer="Shothosgi",
        hops=[
            HopGold(index=1, question="Who created Stevleshi Songs?", answer="Jevo Kajanou"),
            HopGold(index=2, question="Where was #1 born?", answer="Shothosgi"),
        ],
    )
    views = [
        HopView(index=1, sub_query="Who created Stevleshi Songs?", fact=hop_1_fact),
        HopView(index=2, sub_query=f"Where was {hop_1_fact} born?", fact="Magire"),
    ]
    record = ProbeRecord(
        hop=2,
        mode="frozen",
        target="evidence",
        sub_query="Where was Jevo Kajanou born?",
        sub_query_source="gold",
        restored=True,
    )
    confirmed = Suspect(hop=2, strength=2.0, path="evidence", reasons=["hop 2's evidence"])
    runner = SimpleNamespace(context=SimpleNamespace(question=question))
    details: dict = {}
    blamed = PathAwareDiagnoser._entity_source(
        confirmed,
        record,
        bridge_links(views, question.text),
        views,
        runner,
        set(),
        details,  # type: ignore[arg-type]
    )
    assert blamed.hop == expected
    assert ("upstream_of" in details) == (expected == 1)


@pytest.mark.parametrize(
    ("hop_1_fact", "hop_2_fact", "passive_strength", "expected"),
    [
        # hop 1 read right (in a sentence the answer repeats), hop 2 read a wrong year: the run
        # left the gold path at hop 2, whatever the answer's words say about hop 1
        ("Grohelko Publishing", "Grohelko Publishing was founded in 1959.", 2.0, 2),
        # hop 1 read a wrong country, and hop 2 searched for it: hop 1 is where the run left the path
        ("Port Vaifu is located in Kasnekia.", "Grekrobrin", 2.0, 1),
        # every hop read right: nothing to go on but the passive signal
        ("Grohelko Publishing", "Grohelko Publishing was founded in 1949.", 2.0, None),
        # evidence the audit found foreign outranks a reading that left the gold path
        ("Grohelko Publishing", "Grohelko Publishing was founded in 1959.", 3.0, None),
    ],
)
def test_an_unconfirmed_diagnosis_names_where_the_run_first_left_the_gold_path(
    hop_1_fact: str, hop_2_fact: str, passive_strength: float, expected: int | None
) -> None:
    from types import SimpleNamespace

    from causal_middleware.attribution.hops import HopView
    from causal_middleware.attribution.path_aware import PathAwareDiagnoser, Suspect

    question = _publisher_question()
    views = [
        HopView(index=1, sub_query="Who published Zenpe Letters?", fact=hop_1_fact),
        HopView(index=2, sub_query=f"When was {hop_1_fact} founded?", fact=hop_2_fact),
    ]
    runner = SimpleNamespace(
        context=SimpleNamespace(question=question), trajectory=SimpleNamespace(input=question.text)
    )
    passive = Suspect(
        hop=1, strength=passive_strength, path="bridge", reasons=["the answer's terms entered at hop 1"]
    )
    found = PathAwareDiagnoser._first_misread(runner, views, 2, passive)  # type: ignore[arg-type]
    if expected is None:
        assert found is None
    else:
        assert found is not None and found.hop == expected
        assert found is passive if expected == 1 else "not its gold answer" in found.reasons[0]
    # without the gold decomposition there is no gold path to leave
    bare = SimpleNamespace(context=SimpleNamespace(question=question.model_copy(update={"hops": []})))
    assert PathAwareDiagnoser._first_misread(bare, views, 2, passive) is None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("facts", "passive_strength", "expected"),
    [
        # both hops read their gold answer (one in a sentence): no hop sent the run astray
        (["Grohelko Publishing", "Grohelko Publishing was founded in 1949."], 2.0, True),
        # hop 2 read a wrong year: the run left the gold path there, not at the answer
        (["Grohelko Publishing", "Grohelko Publishing was founded in 1959."], 2.0, False),
        # the run stopped after hop 1: right as far as it went, but gold hop 2 was never read
        (["Grohelko Publishing"], 2.0, False),
        # evidence the audit found foreign outranks readings that look right
        (["Grohelko Publishing", "Grohelko Publishing was founded in 1949."], 3.0, False),
    ],
)
def test_an_unconfirmed_diagnosis_names_the_answer_step_when_every_gold_hop_was_read_right(
    facts: list[str], passive_strength: float, expected: bool
) -> None:
    from types import SimpleNamespace

    from causal_middleware.attribution.hops import HopView
    from causal_middleware.attribution.path_aware import PathAwareDiagnoser, Suspect

    question = _publisher_question()
    queries = ["Who published Zenpe Letters?", "When was Grohelko Publishing founded?"]
    views = [HopView(index=i, sub_query=queries[i - 1], fact=f) for i, f in enumerate(facts, start=1)]
    runner = SimpleNamespace(context=SimpleNamespace(question=question))
    passive = Suspect(hop=1, strength=passive_strength, path="bridge", reasons=["the answer's terms"])
    assert PathAwareDiagnoser._read_every_gold_hop(runner, views, passive) is expected  # type: ignore[arg-type]
    assert PathAwareDiagnoser._read_every_gold_hop(runner, views, None) is (expected or passive_strength > 2)  # type: ignore[arg-type]
    bare = SimpleNamespace(context=SimpleNamespace(question=question.model_copy(update={"hops": []})))
    assert PathAwareDiagnoser._read_every_gold_hop(bare, views, passive) is False  # type: ignore[arg-type]


def _publisher_question() -> Question:
    """A 2-hop question (publisher, then its founding year) for the fallback tests."""
    return Question(
        id="q",
        text="When was the publisher of Zenpe Letters founded?",
        answer="1949",
        hops=[
            HopGold(index=1, question="Who published Zenpe Letters?", answer="Grohelko Publishing"),
            HopGold(index=2, question="When was #1 founded?", answer="1949"),
        ],
    )
