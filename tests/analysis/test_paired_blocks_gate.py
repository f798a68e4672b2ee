"""The freeze gate on a ``paired_blocks`` plan (seed 002): the task-block minimum, sub-studies
never pooled, every family in exactly one sub-study."""

import json

import pytest
from django.core.cache import cache

from apps.demo.route_choice import SUB_STUDIES, route_choice_draft
from apps.protocols.gate import version_gate
from apps.protocols.services import version_update
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_verdicts():
    cache.clear()
    yield
    cache.clear()


def _codes(problems):
    return {p.code: p.message for p in problems}


def test_fewer_task_blocks_per_model_than_the_frozen_minimum_is_refused():
    pi = UserFactory()
    # 8 repetitions: one round, so 8 task blocks per model and sub-study, below 64
    draft = route_choice_draft(user=pi, code="ROUTE-G1", parameters={"repetitions": "8"})
    problems = _codes(version_gate(version=draft))
    assert "plan_not_computable" in problems
    message = problems["plan_not_computable"]
    assert "8 task blocks" in message and "minimum of 64" in message
    assert "min_task_blocks" in message


def test_a_minimum_the_schedule_meets_passes_the_gate():
    pi = UserFactory()
    draft = route_choice_draft(
        user=pi, code="ROUTE-G2", parameters={"repetitions": "16", "min_task_blocks": "16"}
    )
    assert version_gate(version=draft) == []


def test_a_rule_pooling_the_sub_studies_is_refused_with_the_rule_named():
    pi = UserFactory()
    draft = route_choice_draft(user=pi, code="ROUTE-G3")
    table = [
        {
            "id": "POOLED-1",
            "finding": "friction moves route choice overall",
            "condition": {
                "any": [
                    {"estimate": "A_friction", "op": ">", "value": 0},
                    {"estimate": "B_friction", "op": ">", "value": 0},
                ]
            },
        }
    ]
    draft = version_update(version=draft, user=pi, decision_table=table)
    problems = _codes(version_gate(version=draft))
    assert "sub_studies_pooled" in problems
    assert "POOLED-1" in problems["sub_studies_pooled"]
    assert "SUB_STUDIES_NEVER_POOLED" in problems["sub_studies_pooled"]


def test_a_family_in_no_sub_study_is_refused():
    pi = UserFactory()
    draft = route_choice_draft(
        user=pi, code="ROUTE-G4", parameters={"sub_studies": json.dumps(SUB_STUDIES[:1])}
    )
    problems = _codes(version_gate(version=draft))
    assert "sub_study_unassigned" in problems
    assert "family B belongs to no sub-study" in problems["sub_study_unassigned"]


def test_fixtures_are_hashed_in_the_frozen_document_and_listed_on_the_fixtures_page(client):
    from apps.core.canonical import canonical_json, sha256_hex
    from apps.demo.route_choice import CONDITION_FIXTURES
    from apps.items.models import Cell
    from apps.protocols.models import Blob
    from apps.protocols.services import version_freeze

    pi = UserFactory()
    draft = route_choice_draft(
        user=pi, code="ROUTE-F", parameters={"repetitions": "16", "min_task_blocks": "16"}
    )
    version = version_freeze(version=draft, user=pi)
    document = json.loads(Blob.objects.get(sha256=version.sha256).content)
    fixtures = document["route_fixtures"]
    cell = Cell.objects.get(version=version, item__code="A-01")
    (task,) = [t for t in fixtures["tasks"] if t["item"] == "A-01"]
    assert task["required_output_sha256"] == sha256_hex(canonical_json(cell.expected_output))
    assert task["input_sha256"] == sha256_hex(cell.prompt.encode("utf-8"))
    (high,) = [
        c for c in fixtures["conditions"] if (c["factor"], c["level"]) == ("friction", "high")
    ]
    wording = CONDITION_FIXTURES["friction"]["high"]["wording"]
    assert high["wording_sha256"] == sha256_hex(wording.encode("utf-8"))
    assert high["sha256"] == sha256_hex(canonical_json(CONDITION_FIXTURES["friction"]["high"]))
    (present,) = [
        c for c in fixtures["conditions"] if (c["factor"], c["level"]) == ("alternate", "present")
    ]
    assert present["tool_schema_sha256"] is not None

    client.force_login(pi)
    page = client.get("/protocols/ROUTE-F/v/1.0/fixtures/")
    assert page.status_code == 200
    text = page.content.decode()
    assert task["required_output_sha256"] in text and high["sha256"] in text
    api = client.get("/api/v1/protocols/ROUTE-F/versions/1.0/fixtures")
    assert api.status_code == 200 and api.json() == fixtures
    stranger = UserFactory()
    client.force_login(stranger)
    assert client.get("/protocols/ROUTE-F/v/1.0/fixtures/").status_code == 404
    assert client.get("/api/v1/protocols/ROUTE-F/versions/1.0/fixtures").status_code == 404


def test_a_document_of_another_pipeline_has_no_route_fixtures_key():
    from apps.protocols.documents import version_document
    from apps.studies.paired_blocks.pipeline import fixtures_document
    from tests.factories import ProtocolVersionFactory

    version = ProtocolVersionFactory()
    assert fixtures_document(version) is None
    assert "route_fixtures" not in version_document(version=version)


def _renamed_draft(pi, code: str, table: list):
    """A paired_blocks draft whose sub-studies are Main and Cue and whose third design factor
    is cue (plain/loud) instead of the seed's framing."""
    from apps.items.models import Factor
    from apps.items.services.design import factor_create, factor_delete

    subs = [
        {**SUB_STUDIES[0], "code": "Main"},
        {**SUB_STUDIES[1], "code": "Cue"},
    ]
    draft = route_choice_draft(
        user=pi,
        code=code,
        parameters={
            "repetitions": "16",
            "min_task_blocks": "16",
            "sub_studies": json.dumps(subs),
            "decision_endpoint": "full_completion",
        },
    )
    factor_delete(factor=Factor.objects.get(version=draft, name="framing"))
    factor_create(version=draft, name="cue", label="cue", levels=["plain", "loud"])
    return version_update(version=draft, user=pi, decision_table=table)


def _rule(rule_id: str, *estimates: str) -> dict:
    return {
        "id": rule_id,
        "finding": "an effect",
        "condition": {"all": [{"estimate": e, "op": ">", "value": 0} for e in estimates]},
    }


def test_a_plan_with_other_sub_study_and_factor_names_passes_the_gate_under_its_own_names():
    from apps.studies.paired_blocks.pipeline import plan_estimates

    pi = UserFactory()
    draft = _renamed_draft(pi, "ROUTE-N1", [_rule("R1", "Main_friction"), _rule("R2", "Cue_cue")])
    names = {e.name for e in plan_estimates(draft)}
    mains = {
        f"{sub}_{factor}" for sub in ("Main", "Cue") for factor in ("alternate", "cue", "friction")
    }
    # and every simple effect, under the plan's own factors and levels (issue #32 §4)
    assert mains <= names and len(names - mains) == 2 * 12
    assert {"Main_friction_at_cue_loud", "Cue_cue_at_alternate_present"} <= names
    assert not any("framing" in name for name in names)
    assert version_gate(version=draft) == []


def test_an_unknown_estimate_name_is_still_refused_naming_the_names_that_exist():
    pi = UserFactory()
    draft = _renamed_draft(pi, "ROUTE-N2", [_rule("R1", "A_framing")])
    problems = _codes(version_gate(version=draft))
    message = problems["rule_unknown_estimate"]
    assert "rule R1 names the estimate 'A_framing'" in message
    assert "Main_friction" in message and "Cue_cue" in message
    assert "A_friction" not in message  # the seed's names are not this plan's


def test_seed_002s_natural_layout_64_fixtures_per_sub_study_one_block_each_freezes(monkeypatch):
    """Issue #32 §2: 64 distinct task fixtures per sub-study, one task block each (8
    repetitions, one round), 2 models: 2,096 administrations. The gate's sample keeps whole
    task blocks (the first 1,000 administrations held repetitions 1–3 of 8 and no block)."""
    from apps.analysis.computability import synthetic_raw, version_computability
    from apps.demo import route_choice
    from apps.protocols.services import version_freeze

    monkeypatch.setattr(route_choice, "TASKS_PER_SUB_STUDY", 64)
    pi = UserFactory()
    draft = route_choice_draft(user=pi, code="ROUTE-64", parameters={"repetitions": "8"})
    synthetic = synthetic_raw(draft)
    repetitions = {a["repetition"] for a in synthetic.raw["observations"]["administrations"]}
    assert repetitions == set(range(1, 9))  # the whole block
    items = {a["item"] for a in synthetic.raw["observations"]["administrations"]}
    assert len([i for i in items if "CTRL" not in i]) == 128  # every fixture: 64 per sub-study
    verdict = version_computability(version=draft)
    assert verdict.problems == []
    assert version_freeze(version=draft, user=pi).state == "frozen"


# -- issue #32 §3: synthetic data shaped like a real import; a seed's defaults under its template


def _generic_paired_blocks_draft(pi, code: str, leave_out=("secondary_endpoints",), extra=None):
    """Seed 002's design and plan as a ``generic`` protocol that names the paired_blocks
    pipeline and adds its parameters (issue #32 Why 6), leaving ``leave_out`` unset."""
    from apps.demo import route_choice as demo
    from apps.protocols.services import protocol_create
    from apps.raters.services import rubric_create
    from apps.raters.services.scorers import scorer_register, scorer_roster_enroll
    from apps.responses.services import evaluand_register, roster_enroll

    protocol = protocol_create(user=pi, code=code, title="Route choice", template="generic")
    draft = protocol.versions.get(label="1.0")
    values = {
        **demo.PARAMETERS,
        "condition_fixtures": json.dumps(demo.CONDITION_FIXTURES),
        "repetitions": "16",
        "min_task_blocks": "16",
        "interval_method": "bootstrap",  # generic's own (required) parameter
        **(extra or {}),
    }
    held = {p.name for p in draft.parameters.all()}
    draft = version_update(
        version=draft,
        user=pi,
        pipeline="paired_blocks",
        sections=demo.SECTIONS,
        parameters={k: v for k, v in values.items() if k in held},
        new_parameters=[
            {"name": k, "value": v}
            for k, v in values.items()
            if k not in held and k not in leave_out
        ],
    )
    demo._design(draft)
    for evaluand_code, identity in demo.MODELS.items():
        evaluand, _ = evaluand_register(user=pi, label=f"{code}-{evaluand_code}", **identity)
        roster_enroll(version=draft, evaluand=evaluand, code=evaluand_code, user=pi)
    rubric_create(version=draft, name="Route-choice endpoints", fields=demo.RUBRIC)
    for scorer_code, role, identity in (
        ("sorting-oracle", "oracle", demo.ORACLE),
        ("omission-check", "omission_check", demo.OMISSION_CHECK),
    ):
        scorer, _ = scorer_register(user=pi, label=f"{code}-{scorer_code}", **identity)
        scorer_roster_enroll(version=draft, scorer=scorer, code=scorer_code, role=role, user=pi)
    return draft


def test_a_generic_plan_does_not_take_seed_002s_secondary_endpoints_silently():
    pi = UserFactory()
    draft = _generic_paired_blocks_draft(pi, "GEN-1")
    problems = _codes(version_gate(version=draft))
    assert set(problems) == {"param_seed_default"}
    message = problems["param_seed_default"]
    assert "secondary_endpoints unset" in message and "operations" in message
    assert "applies only under the route_choice template" in message
    # Added by its name alone, it no longer comes pre-filled with the seed's value.
    draft = version_update(version=draft, user=pi, new_parameters=[{"name": "secondary_endpoints"}])
    assert draft.parameters.get(name="secondary_endpoints").value == ""
    assert "param_seed_default" in _codes(version_gate(version=draft))


def test_an_endpoint_no_import_can_fill_is_refused_at_the_gate_naming_it():
    pi = UserFactory()
    draft = _generic_paired_blocks_draft(
        pi,
        "GEN-2",
        leave_out=(),
        extra={"secondary_endpoints": json.dumps(["operations", "wall_clock_seconds"])},
    )
    problems = _codes(version_gate(version=draft))
    assert set(problems) == {"plan_not_computable"}
    message = problems["plan_not_computable"]
    assert "wall_clock_seconds, which no import can fill" in message
    assert "operations," not in message.split("which")[0]  # a session archive carries it
    assert "docs/import-formats.md" in message


def test_a_generic_plan_that_sets_its_own_values_passes_and_its_defaults_are_shown(client):
    pi = UserFactory()
    draft = _generic_paired_blocks_draft(
        pi,
        "GEN-3",
        leave_out=("bootstrap_interval",),
        # the decision endpoint is among them; a session archive carries operations
        extra={"secondary_endpoints": json.dumps(["alternate_route", "operations"])},
    )
    problems = version_gate(version=draft)
    assert problems == []
    from apps.protocols.gate import version_gate_notes

    notes = version_gate_notes(version=draft, problems=problems)
    assert "The plan leaves bootstrap_interval unset: default: studentized." in notes
    client.force_login(pi)
    page = client.get("/protocols/GEN-3/v/1.0/edit/").content.decode()
    assert "default: studentized" in page


def test_the_drafts_catalogue_lists_the_estimates_the_plan_will_produce(client):
    pi = UserFactory()
    draft = _renamed_draft(pi, "ROUTE-N3", [])
    client.force_login(pi)
    page = client.get(f"/protocols/ROUTE-N3/v/{draft.label}/edit/").content.decode()
    catalogue = page.split('id="plan-catalogue"', 1)[1].split("</section>", 1)[0]
    assert "<code>Main_cue</code>" in catalogue and "<code>Cue_friction</code>" in catalogue
    assert "A_alternate" not in catalogue
    api = client.get(f"/api/v1/protocols/ROUTE-N3/versions/{draft.label}/catalogue").json()
    assert "Main_cue" in {e["name"] for e in api["estimates"]}


def test_the_gates_sessions_carry_only_the_documented_import_fields():
    from pathlib import Path

    import numpy as np

    from apps.analysis.import_shapes import SESSION_ARCHIVE, synthetic_session

    doc = (Path(__file__).resolve().parents[2] / "docs" / "import-formats.md").read_text()
    for spec in SESSION_ARCHIVE:
        assert f"`{spec.path}`" in doc, spec.path
    record = synthetic_session(np.random.default_rng(1), ["t"])
    assert set(record) <= {"messages", "model_usage", "metadata"}
    documented = {
        s.path.split(".", 1)[1] for s in SESSION_ARCHIVE if s.path.startswith("metadata.")
    }
    assert set(record["metadata"]) <= documented
