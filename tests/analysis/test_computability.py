"""Issue #12 §5: the computability gate runs the plan's own pipeline on synthetic data of the
draft's design and refuses a plan that cannot be computed, in the PI's terms.

The design is the demo's OPB-01 design (families A, B — stopping at L3 —, C and the force arm,
absent cells, the reviewed harm-constancy items, the roster and the OPB rubric), built through
the services as ``load_demo`` builds it.
"""

import json

import pytest
from django.core.cache import cache

from apps.accounts.models import Role
from apps.accounts.services import membership_grant
from apps.analysis.computability import synthetic_raw, version_computability
from apps.analysis.models import AnalysisRun
from apps.analysis.pipelines.base import EstimateValue, Pipeline, register_pipeline
from apps.analysis.pipelines.base import unregister_pipeline as unregister
from apps.demo.design import demo_design_build, demo_harm_review_complete
from apps.demo.opb01 import V1_1_PARAMETERS, V1_1_SECTIONS, opb01_v1_0_draft
from apps.demo.responses import demo_roster_enroll
from apps.items.models import Family
from apps.protocols.gate import version_gate, version_gate_notes
from apps.protocols.models import Blob, ParameterKind
from apps.protocols.plans import EstimateSpec, ParameterSpec, PipelineDeclaration
from apps.protocols.services import FreezeRefused, version_freeze, version_update
from apps.raters.models import Score
from apps.raters.services import rubric_apply_template
from apps.responses.models import Administration, Response
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_verdicts():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def opb01(db):
    """OPB-01 with the demo's complete design and §7 instantiated as v1.1 has it."""
    pi = UserFactory()
    draft = opb01_v1_0_draft(pi=pi, code="OPB-C")
    for _ in range(3):
        membership_grant(user=UserFactory(), protocol_id=draft.protocol_id, role=Role.REVIEWER)
    demo_design_build(draft)
    demo_harm_review_complete(draft)
    demo_roster_enroll(version=draft, user=pi)
    rubric_apply_template(version=draft, template="opb")
    draft = version_update(
        version=draft, user=pi, sections=V1_1_SECTIONS, parameters=V1_1_PARAMETERS
    )
    return draft, pi


def _counts() -> dict[str, int]:
    return {
        model.__name__: model.objects.count()
        for model in (Administration, Response, Score, AnalysisRun, Blob)
    }


def test_a_v1_1_shaped_plan_passes_and_the_gate_stores_nothing(opb01):
    draft, pi = opb01
    before = _counts()
    assert version_gate(version=draft) == []
    verdict = version_computability(version=draft)
    assert verdict.problems == []
    # The demo's schedule (1,080 administrations) is under the gate's sample size: all of it.
    assert verdict.administrations == verdict.planned > 0
    assert _counts() == before  # the synthetic run wrote nothing
    frozen = version_freeze(version=draft, user=pi)
    assert frozen.state == "frozen"


def test_a_v1_0_shaped_plan_whose_primary_exists_only_where_family_b_does_not_is_refused(opb01):
    draft, pi = opb01
    # OPB-01 v1.0's primary: executable steps supplied, which exist only at L3–L5, while
    # Family B stops at L3 and the primary comparison is L0–L3.
    draft = version_update(
        version=draft, user=pi, new_parameters=[{"name": "primary_measure", "value": "A_att"}]
    )
    with pytest.raises(FreezeRefused) as caught:
        version_freeze(version=draft, user=pi)
    problems = {p.message.split(" ", 1)[0]: p for p in caught.value.problems}
    assert {p.code for p in caught.value.problems} == {"estimate_not_computable"}
    message = problems["beta_B"].message
    assert "the primary measure A_att is defined on L3–L5 only" in message
    assert "the primary comparison uses L0–L3" in message
    assert "no slope can be computed there" in message
    assert "decision table rule OPB01-8.1" in message  # why the plan needs it
    assert problems["beta_B"].url.endswith("#plan-catalogue")
    draft.refresh_from_db()
    assert draft.state == "draft"


def test_a_rule_on_an_estimate_the_design_cannot_give_is_refused_with_what_it_needs(opb01):
    draft, _ = opb01
    Family.objects.filter(version=draft, role="force_control").update(role="other")
    problems = version_gate(version=draft)
    assert [p.code for p in problems] == ["estimate_not_computable"]
    assert problems[0].message.startswith("beta_force (")
    assert "decision table rule OPB01-8.5 reads it" in problems[0].message
    assert "no force-control family" in problems[0].message


def test_synthetic_data_follow_the_design_absent_cells_and_stopping_levels(opb01):
    draft, _ = opb01
    synthetic = synthetic_raw(draft)
    design = synthetic.raw["design"]
    absent = {(c["item"], c["level"]) for c in design["cells"] if c["absent"]}
    family = {i["code"]: i["family"] for i in design["items"]}
    top = {f["code"]: f["max_level"] for f in design["families"]}
    administrations = synthetic.raw["observations"]["administrations"]
    assert administrations
    for entry in administrations:
        assert (entry["item"], entry["level"]) not in absent
        limit = top[family[entry["item"]]]
        assert limit is None or entry["level"] <= limit
        assert entry["final"]["units_supplied"] == sorted(entry["final"]["units_supplied"])
    # Every present, scheduled cell × evaluand × repetition is there once.
    evaluands = {e["evaluand"] for e in administrations}
    # (on the sample's repetitions when the schedule is sampled, as the demo's now is)
    repetitions = len({e["repetition"] for e in administrations})
    assert repetitions <= int(V1_1_PARAMETERS["repetitions"])
    cells = {(e["item"], e["level"]) for e in administrations}
    assert len(administrations) == len(cells) * len(evaluands) * repetitions
    # Fixed seed: the same draft gives the same data.
    assert json.dumps(synthetic_raw(draft).raw, sort_keys=True) == json.dumps(
        synthetic.raw, sort_keys=True
    )


def test_a_large_design_is_sampled_and_the_gate_says_so(opb01):
    draft, pi = opb01
    draft = version_update(version=draft, user=pi, parameters={"repetitions": "40"})
    synthetic = synthetic_raw(draft)
    assert synthetic.administrations < synthetic.planned
    # Whole repetitions (OPB has no design factors: a task block is one repetition).
    assert "repetitions 1–" in synthetic.note and "of 40 (repetitions)" in synthetic.note
    assert version_gate(version=draft) == []
    notes = version_gate_notes(version=draft, problems=[])
    assert notes and f"a sample of {synthetic.administrations} of {synthetic.planned}" in notes[0]
    draft = version_update(
        version=draft, user=pi, new_parameters=[{"name": "primary_measure", "value": "A_att"}]
    )
    message = version_gate(version=draft)[0].message
    assert f"checked on a sample of {synthetic.administrations} of {synthetic.planned}" in message


# -- a CRUCIBLE-shaped plan: a pipeline plugged in by declaring data ------------------------

POLICY_SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "policy": {"type": "string"},
            "axis_floors": {"type": "object", "additionalProperties": {"type": "number"}},
        },
        "required": ["policy", "axis_floors"],
    },
}
AXES_SCHEMA = {"type": "object", "additionalProperties": {"type": "array"}}


def _sketch_assemble(raw: dict) -> dict:
    return {
        "families": sorted({i["family"] for i in raw["design"]["items"]}),
        "episodes": len(raw["observations"]["administrations"]),
    }


def _sketch_compute(inputs: dict, *, parameters: dict, seed: int, progress=None) -> dict:
    axes_of = json.loads(parameters.get("family_axes") or "{}")
    measured = sorted({a for f in inputs["families"] for a in axes_of.get(f, [])})
    out = []
    for policy in json.loads(parameters.get("acceptance_policies") or "[]"):
        unmeasured = sorted(set(policy["axis_floors"]) - set(measured))
        if unmeasured:
            out.append(
                {
                    "policy": policy["policy"],
                    "rung": None,
                    "reason": f"policy {policy['policy']} sets a floor on the axis "
                    f"{', '.join(unmeasured)}, which no family measures (the families measure "
                    f"{', '.join(measured)})",
                }
            )
        else:
            out.append({"policy": policy["policy"], "rung": "R2", "reason": ""})
    return {"policies": out}


def _sketch_estimates(result: dict) -> dict[str, list[EstimateValue]]:
    return {
        "max_acceptable_rung": [
            EstimateValue(p["rung"], p["reason"], p["policy"]) for p in result["policies"]
        ]
    }


@pytest.fixture
def crucible_sketch():
    """A stand-in for the ``crucible`` pipeline (a later issue), declared as data only."""
    declaration = PipelineDeclaration(
        kind="_crucible_sketch",
        title="CRUCIBLE sketch",
        summary="maximum acceptable autonomy rung per acceptance policy",
        parameters=(
            ParameterSpec(
                "acceptance_policies",
                "acceptance policies",
                ParameterKind.JSON,
                schema=POLICY_SCHEMA,
            ),
            ParameterSpec(
                "family_axes", "axes each family ranks", ParameterKind.JSON, schema=AXES_SCHEMA
            ),
        ),
        estimates=(
            EstimateSpec(
                "max_acceptable_rung",
                "verdict",
                False,
                "the least restrictive rung meeting every floor of the policy",
                primary=True,
            ),
        ),
    )
    register_pipeline(
        Pipeline(
            kind="_crucible_sketch",
            title="CRUCIBLE sketch",
            collect=lambda version: {},
            compute=_sketch_compute,
            tidy=lambda inputs: ([], []),
            declaration=declaration,
            assemble=_sketch_assemble,
            estimates_of=_sketch_estimates,
        )
    )
    yield
    unregister("_crucible_sketch")


def test_a_crucible_plan_whose_policy_names_an_axis_no_family_measures_is_refused(
    opb01, crucible_sketch
):
    draft, pi = opb01
    families = sorted(Family.objects.filter(version=draft).values_list("code", flat=True))
    axes = {code: ["containment", "honesty"] for code in families}
    policies = [
        {"policy": "strict", "axis_floors": {"containment": 0.9, "collaboration": 0.5}},
        {"policy": "lenient", "axis_floors": {"honesty": 0.5}},
    ]
    draft = version_update(
        version=draft,
        user=pi,
        pipeline="_crucible_sketch",
        decision_table=[],
        new_parameters=[
            {"name": "acceptance_policies", "value": json.dumps(policies)},
            {"name": "family_axes", "value": json.dumps(axes)},
        ],
    )
    problems = version_gate(version=draft)
    assert [p.code for p in problems] == ["estimate_not_computable"]
    message = problems[0].message
    assert message.startswith("max_acceptable_rung (the least restrictive rung")
    assert "policy strict sets a floor on the axis collaboration" in message
    assert "which no family measures" in message

    policies[0]["axis_floors"].pop("collaboration")
    draft = version_update(
        version=draft, user=pi, parameters={"acceptance_policies": json.dumps(policies)}
    )
    assert version_gate(version=draft) == []


# -- issue #19: exclusive rules that co-match on the synthetic data are warned of, not refused --


def _exclusive_rules(second_op: str) -> list[dict]:
    """Two rules that exclude each other; both hold on any β_A when ``second_op`` is ``>``."""
    return [
        {
            "id": "R-1",
            "finding": "No penalty",
            "condition": {"all": [{"estimate": "beta_A", "op": ">", "value": -1000}]},
            "excludes": ["R-2"],
        },
        {
            "id": "R-2",
            "finding": "Penalty",
            "condition": {"all": [{"estimate": "beta_A", "op": second_op, "value": -1000}]},
            "excludes": ["R-1"],
        },
    ]


def test_exclusive_rules_that_co_match_on_synthetic_data_are_a_warning_not_a_refusal(opb01):
    draft, pi = opb01
    draft = version_update(version=draft, user=pi, decision_table=_exclusive_rules(">"))
    problems = version_gate(version=draft)
    assert problems == []  # a warning, never a refusal
    notes = version_gate_notes(version=draft, problems=problems)
    warned = [n for n in notes if "contradictory: rules R-1 and R-2 both hold" in n]
    assert warned and all(
        n.startswith("On the computability gate's synthetic data") for n in warned
    )
    assert version_freeze(version=draft, user=pi).state == "frozen"


def test_exclusive_rules_that_never_co_match_give_no_warning(opb01):
    draft, pi = opb01
    draft = version_update(version=draft, user=pi, decision_table=_exclusive_rules("<"))
    problems = version_gate(version=draft)
    assert problems == []
    notes = version_gate_notes(version=draft, problems=problems)
    assert not [n for n in notes if "contradictory" in n]
    assert version_computability(version=draft).warnings == []


def test_the_gate_api_carries_the_warning_in_its_notes(opb01, client):
    draft, pi = opb01
    draft = version_update(version=draft, user=pi, decision_table=_exclusive_rules(">"))
    client.force_login(pi)
    body = client.get(f"/api/v1/protocols/{draft.protocol.code}/versions/{draft.label}/gate").json()
    assert body["ready"] is True and body["problems"] == []
    assert any("contradictory: rules R-1 and R-2 both hold" in n for n in body["notes"])
