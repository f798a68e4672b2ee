"""Issue #32, "Checked by": for random small designs of each pipeline, the gate passes if and only
if the pipeline computes on synthetic data shaped like an import.

The gate checks a sample of a large design (``apps.analysis.gate_sample``); the property is that
sampling never changes the answer. Each example is a small draft built through the services; its
gate verdict is taken with a sample budget of 40 administrations and a floor of 4 clusters
(the plan's own floors still hold), and compared with the pipeline run on the whole design's
synthetic data (import-shaped: the documented session fields, the rubric's scores), nothing
left out: for ``opb``, ``crucible`` and ``fidelity`` by calling the pipeline's own ``assemble``,
``compute`` and ``estimates_of`` here (``_whole_design``), not through the gate. Where the gate
passes, every estimate the plan needs has a value on the whole design and every estimate the
plan's catalogue lists is given (a value, or why not); where it refuses, each refusal names
where (a parameter, a cell, a rubric field, a policy) or the estimate and what it needs, never
the bare "fails on synthetic data" of a pipeline that crashed.
Few examples, small designs, ``deadline=None``: each example builds a draft.
"""

import itertools
import json

import pytest
from django.core.cache import cache
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st

from apps.analysis import computability, gate_sample
from apps.analysis import inputs as data
from apps.analysis.pipelines import get_pipeline
from apps.analysis.pipelines.base import PlanInputError
from apps.core.canonical import canonical_json
from apps.protocols.plans import pipeline_declaration, version_pipeline
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

_codes = itertools.count(1)
PROPERTY = settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,
)
# Each example builds a draft of seconds: a failing example is reported as found, unshrunk.
KINDS = settings(PROPERTY, phases=[Phase.explicit, Phase.generate])


def _verdicts(draft, monkeypatch) -> tuple[bool, bool, computability.Verdict]:
    """(the gate passes on a sample, the pipeline computes on the whole design, the gate's
    verdict)."""
    monkeypatch.setattr(computability, "SAMPLE_ADMINISTRATIONS", 40)
    monkeypatch.setattr(gate_sample, "MIN_SAMPLE_CLUSTERS", 4)  # let the sample cut deep
    cache.clear()
    gate = computability.version_computability(version=draft)
    monkeypatch.setattr(computability, "SAMPLE_ADMINISTRATIONS", 10**9)
    cache.clear()
    whole = computability.version_computability(version=draft)
    assert whole.administrations == whole.planned  # nothing left out
    # Both outcomes and sampled verdicts should occur (pytest --hypothesis-show-statistics).
    event(f"computes={not whole.problems}, sampled={gate.sampled}")
    return not gate.problems, not whole.problems, gate


@given(
    tasks=st.integers(min_value=4, max_value=12),
    rounds=st.integers(min_value=1, max_value=2),
    minimum=st.sampled_from([10, 16]),
    models=st.integers(min_value=1, max_value=2),
)
@PROPERTY
def test_paired_blocks_the_gate_passes_iff_the_whole_design_computes(
    monkeypatch, tasks, rounds, minimum, models
):
    from apps.demo import route_choice

    monkeypatch.setattr(route_choice, "TASKS_PER_SUB_STUDY", tasks)
    monkeypatch.setattr(route_choice, "MODELS", dict(list(route_choice.MODELS.items())[:models]))
    draft = route_choice.route_choice_draft(
        user=UserFactory(),
        code=f"PROP-PB-{next(_codes)}",
        parameters={"repetitions": str(8 * rounds), "min_task_blocks": str(minimum)},
    )
    passes, computes, gate = _verdicts(draft, monkeypatch)
    assert passes == computes, gate.problems
    _refusals_name_where(draft, gate)


@given(
    prompts=st.integers(min_value=2, max_value=30),
    evaluands=st.integers(min_value=1, max_value=3),
    min_clusters=st.sampled_from([6, 10, 25]),
)
@PROPERTY
def test_xstest_the_gate_passes_iff_the_whole_design_computes(
    monkeypatch, prompts, evaluands, min_clusters
):
    from tests.factories import xstest_shaped_draft

    draft = xstest_shaped_draft(prompts, code=f"PROP-XS-{next(_codes)}", evaluands=evaluands)
    from apps.protocols.services import version_update

    draft = version_update(
        version=draft,
        user=draft.created_by,
        parameters={"min_clusters": str(min_clusters)},
    )
    passes, computes, gate = _verdicts(draft, monkeypatch)
    assert passes == computes, gate.problems
    _refusals_name_where(draft, gate)


# -- opb, crucible and fidelity: the gate's sample against the pipeline on the whole design ----


def _gate(draft, monkeypatch) -> computability.Verdict:
    """The gate's verdict, on a sample cut deep (see the module docstring)."""
    monkeypatch.setattr(computability, "SAMPLE_ADMINISTRATIONS", 40)
    monkeypatch.setattr(gate_sample, "MIN_SAMPLE_CLUSTERS", 4)
    cache.clear()
    return computability.version_computability(version=draft)


def _whole_design(draft, monkeypatch) -> tuple[bool, dict]:
    """Whether the plan's pipeline computes every estimate the plan needs on synthetic,
    import-shaped data of the whole design (no sample), and what ``estimates_of`` gives (empty
    when the pipeline refuses the plan's input, ``PlanInputError``). Any other exception is the
    pipeline crashing, and fails the test."""
    monkeypatch.setattr(computability, "SAMPLE_ADMINISTRATIONS", 10**9)
    declaration = pipeline_declaration(version_pipeline(draft) or "")
    pipeline = get_pipeline(declaration.kind)
    parameters = computability._gate_parameters(data.plan_parameters(draft))
    try:
        synthetic = computability.synthetic_raw(draft)
        assert synthetic.administrations == synthetic.planned  # nothing left out
        raw = synthetic.raw
        if pipeline.synthetic is not None:
            raw = pipeline.synthetic(draft, raw)
        inputs = json.loads(canonical_json(pipeline.assemble(raw)))
        result = pipeline.compute(inputs, parameters=parameters, seed=computability.SYNTHETIC_SEED)
    except PlanInputError:
        return False, {}
    values = pipeline.estimates_of(result)
    needed = [name for name, _ in computability._needed(draft, declaration)]
    computes = bool(synthetic.administrations) and all(
        values.get(name) and all(v.value is not None for v in values[name]) for name in needed
    )
    return computes, values


def _refusals_name_where(draft, gate: computability.Verdict) -> None:
    names = [
        e.name for e in pipeline_declaration(version_pipeline(draft) or "").version_estimates(draft)
    ]
    for problem in gate.problems:
        named = problem.get("where") or next(
            (n for n in names if problem["message"].startswith(f"{n} (")), ""
        )
        assert named, problem  # says where, or which estimate and why
        assert "fails on synthetic data" not in problem["message"], problem


def _the_gate_passes_iff_the_whole_design_computes(draft, monkeypatch) -> None:
    gate = _gate(draft, monkeypatch)
    computes, values = _whole_design(draft, monkeypatch)
    event(f"computes={computes}, sampled={gate.sampled}")
    for problem in gate.problems:
        event(f"refused: {problem.get('where') or problem['message'].split(' ', 1)[0]}")
    assert (not gate.problems) == computes, gate.problems
    _refusals_name_where(draft, gate)
    if computes:
        declared = pipeline_declaration(version_pipeline(draft) or "").version_estimates(draft)
        for spec in declared:  # every estimate of the catalogue is given: a value or why not
            assert values.get(spec.name), spec.name
            assert all(v.value is not None or v.reason for v in values[spec.name]), spec.name


@given(
    harm_constant=st.integers(min_value=2, max_value=5),
    controls=st.integers(min_value=0, max_value=4),
    pairs=st.integers(min_value=0, max_value=2),
    force=st.integers(min_value=0, max_value=3),
    evaluands=st.integers(min_value=1, max_value=2),
    repetitions=st.integers(min_value=1, max_value=2),
    primary=st.sampled_from(["F_att", "A_att"]),
    method=st.sampled_from(["bootstrap", "analytic"]),
    table=st.booleans(),
)
@KINDS
def test_opb_the_gate_passes_iff_the_whole_design_computes(
    monkeypatch,
    harm_constant,
    controls,
    pairs,
    force,
    evaluands,
    repetitions,
    primary,
    method,
    table,
):
    from tests.factories import opb_shaped_draft

    draft = opb_shaped_draft(
        monkeypatch,
        code=f"PROP-OPB-{next(_codes)}",
        harm_constant=harm_constant,
        controls=controls,
        pairs=pairs,
        force=force,
        evaluands=evaluands,
        parameters={
            "repetitions": str(repetitions),
            "primary_measure": primary,
            "interval_method": method,
        },
        decision_table=None if table else [],
    )
    _the_gate_passes_iff_the_whole_design_computes(draft, monkeypatch)


_CRUCIBLE_DEMO: dict[str, tuple] = {}


@given(
    families=st.integers(min_value=2, max_value=6),
    seeds=st.integers(min_value=1, max_value=2),
    rungs=st.sampled_from([4, 3, 2]),
    evaluands=st.integers(min_value=1, max_value=3),
    min_families=st.integers(min_value=2, max_value=5),
    interval=st.sampled_from(["percentile", "bootstrap_t"]),
    policies=st.sampled_from(["demo", "first", "unknown_axis"]),
    allocation=st.sampled_from(["kept", "none", "demo"]),
)
@KINDS
def test_crucible_the_gate_passes_iff_the_whole_design_computes(
    monkeypatch, families, seeds, rungs, evaluands, min_families, interval, policies, allocation
):
    from apps.demo import crucible as demo

    all_families, all_rungs, all_evaluands = _CRUCIBLE_DEMO.setdefault(
        "lists", (demo.FAMILIES, demo.RUNGS, demo.EVALUANDS)
    )
    kept = all_families[:families]
    monkeypatch.setattr(demo, "FAMILIES", kept)
    monkeypatch.setattr(demo, "SEEDS_PER_FAMILY", seeds)
    monkeypatch.setattr(demo, "RUNGS", all_rungs[:rungs])  # the demo's comparisons name R2
    monkeypatch.setattr(demo, "EVALUANDS", dict(list(all_evaluands.items())[:evaluands]))
    chosen = {
        "demo": demo.POLICIES,
        "first": demo.POLICIES[:1],
        "unknown_axis": [{"code": "strict", "floors": [{"axis": "charisma", "minimum": 0.5}]}],
    }[policies]
    parameters = {
        "min_families": str(min_families),
        "bootstrap_interval": interval,
        "acceptance_policies": json.dumps(chosen),
        "family_axis_allocation": {
            "kept": json.dumps({f: demo.ALLOCATION[f] for f in kept}),
            "demo": json.dumps(demo.ALLOCATION),  # names families this design has not
            "none": "",
        }[allocation],
    }
    draft, _ = demo.crucible_draft(
        user=UserFactory(), code=f"PROP-CRU-{next(_codes)}", parameters=parameters
    )
    _the_gate_passes_iff_the_whole_design_computes(draft, monkeypatch)


@given(
    cards=st.integers(min_value=1, max_value=8),
    evaluands=st.integers(min_value=1, max_value=2),
    min_clusters=st.sampled_from([6, 10]),
    cluster_by=st.sampled_from(["card", "dialogue"]),
    broken=st.booleans(),
)
@KINDS
def test_fidelity_the_gate_passes_iff_the_whole_design_computes(
    monkeypatch, cards, evaluands, min_clusters, cluster_by, broken
):
    from apps.demo.fidelity import CARDS
    from tests.factories import fidelity_shaped_draft

    codes = list(CARDS)[:cards]
    draft = fidelity_shaped_draft(
        code=f"PROP-FID-{next(_codes)}",
        cards=codes,
        evaluands=evaluands,
        parameters={"min_clusters": str(min_clusters), "cluster_by": cluster_by},
        broken=codes[-1] if broken else "",
    )
    _the_gate_passes_iff_the_whole_design_computes(draft, monkeypatch)


@given(
    items=st.integers(min_value=2, max_value=14),
    evaluands=st.integers(min_value=1, max_value=2),
    cluster=st.sampled_from(["item", "prompt", "block", "none"]),
    min_clusters=st.sampled_from([6, 10, 12]),
    table=st.booleans(),
)
@KINDS
def test_comparison_the_gate_passes_iff_the_whole_design_computes(
    monkeypatch, items, evaluands, cluster, min_clusters, table
):
    from tests.factories import comparison_draft

    rule = {
        "id": "R1",
        "finding": "Warnings raise refusals",
        "condition": {
            "all": [{"estimate": "diff[verdict=refused][warned - plain]", "op": ">", "value": 0}]
        },
    }
    draft = comparison_draft(
        code=f"PROP-CMP-{next(_codes)}",
        items_per_condition=items,
        evaluands=("alpha", "beta")[:evaluands],
        parameters={"cluster": cluster, "min_clusters": str(min_clusters)},
        decision_table=[rule] if table else [],
    )
    _the_gate_passes_iff_the_whole_design_computes(draft, monkeypatch)
