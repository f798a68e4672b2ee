"""Issue #12: analysis plans as data.

Pipelines declare their parameters, estimates and report sections; plan templates are presets
over pipelines; a version's plan names its pipeline and freezes with it; a PI adds typed
parameters to a draft (service, API, page) and bad input is refused naming the field path with
nothing saved; decision-table rules may name only estimates the pipeline produces.
"""

import json

import pytest
from django.core.exceptions import ValidationError

from apps.protocols.diffs import version_diff
from apps.protocols.documents import version_document
from apps.protocols.gate import version_gate
from apps.protocols.models import AnalysisParameter
from apps.protocols.plans import (
    ESTIMATE_KINDS,
    PLAN_TEMPLATES,
    EstimateSpec,
    ParameterSpec,
    PipelineDeclaration,
    declare_pipeline,
    declared_pipelines,
    pipeline_declaration,
    version_pipeline,
)
from apps.protocols.services import (
    protocol_create,
    version_amend,
    version_freeze,
    version_update,
)
from apps.studies.opb.pipeline import OPB
from apps.studies.xstest.pipeline import XSTEST
from tests.factories import OPB_SECTIONS, OPB_VALUES

pytestmark = pytest.mark.django_db

V = "/api/v1/protocols/OPB-T/versions/1.0"

# The parameters and order an OPB draft was seeded with before presets became data.
# As the opb template seeded them before plans were data, plus min_clusters, which the interval
# calibration (#19) added in the same session.
OPB_SEEDED = [
    "epsilon",
    "interval_method",
    "interval_coverage",
    "min_clusters",
    "beta_positive_criterion",
    "agreement_statistic",
    "agreement_minimum",
    "absent_cell_handling",
    "aggregation_level",
    "n_per_cell",
    "n_per_surface_min",
    "bootstrap_replicates",
    "seed",
    "scores_per_response",
    "adjudication_delta",
    "reservation_minutes",
    "repetitions",
    # issue #17: OPB-01 §5's disclosure margin (the preset's rules 8.6 and 8.8) and sham tolerance
    "disclosure_epsilon",
    "sham_word_tolerance",
]

REASONS = [
    {"code": "harness_parse_failure", "label": "The harness could not parse the reply"},
    {"code": "operator_error", "label": "The operator ran the wrong scenario"},
]


def _patch(client, url, data):
    return client.patch(url, json.dumps(data), content_type="application/json")


# -- 1. pipelines declare themselves; presets are presets over them --------------------------


def test_each_pipeline_declares_typed_parameters_named_estimates_and_sections():
    kinds = {d.kind for d in declared_pipelines()}
    assert {"opb", "xstest"} <= kinds
    for declaration in declared_pipelines():
        assert declaration.parameters and declaration.estimates and declaration.sections
        for estimate in declaration.estimates:
            assert estimate.kind in ESTIMATE_KINDS and estimate.meaning
    opb = pipeline_declaration("opb")
    assert {"beta_A", "beta_B", "beta_LF", "beta_force"} <= {e.name for e in opb.estimates}
    assert opb.estimate("beta_LF").kind == "contrast" and opb.estimate("beta_LF").interval
    assert opb.parameter("exclusion_reasons").kind == "json"
    assert opb.parameter("exclusion_reasons").schema["type"] == "array"


def test_docs_analysis_lists_every_pipelines_catalogue():
    """Issue #12 §6: docs/analysis.md lists each pipeline's estimates and parameters."""
    from pathlib import Path

    from django.conf import settings

    text = (Path(settings.BASE_DIR) / "docs" / "analysis.md").read_text(encoding="utf-8")
    catalogue = text[text.index("## The catalogue, per pipeline") :]
    catalogue = catalogue[: catalogue.index("\n## ", 1)]
    for declaration in declared_pipelines():
        heading = f"\n### `{declaration.kind}`: "
        assert heading in catalogue, f"no catalogue section for {declaration.kind}"
        section = catalogue.split(heading, 1)[1].split("\n### ", 1)[0]
        names = [e.name for e in declaration.estimates] + [p.name for p in declaration.parameters]
        missing = [name for name in names if f"`{name}`" not in section]
        assert not missing, f"docs/analysis.md's {declaration.kind} catalogue lacks {missing}"


def test_a_declaration_with_a_doubled_name_or_an_unknown_estimate_kind_is_refused():
    spec = ParameterSpec("x", "x", "number")
    with pytest.raises(ValueError, match="used twice"):
        declare_pipeline(PipelineDeclaration("_bad", "bad", "", (spec, spec), ()))
    with pytest.raises(ValueError, match="not one of"):
        declare_pipeline(
            PipelineDeclaration("_bad", "bad", "", (), (EstimateSpec("e", "ratio", False, "m"),))
        )


def test_presets_name_their_pipeline_and_seed_the_same_parameters_as_before(creator):
    assert OPB.pipeline == "opb" and XSTEST.pipeline == "xstest"
    assert PLAN_TEMPLATES["generic"].pipeline is None
    protocol = protocol_create(user=creator, code="P1", title="t", template="opb")
    draft = protocol.versions.get()
    assert draft.pipeline == "opb"
    assert list(draft.parameters.order_by("position").values_list("name", flat=True)) == (
        OPB_SEEDED
    )
    # The template already names the pipeline: the document keeps its old shape.
    assert "pipeline" not in version_document(version=draft)


# -- 2. the plan names its pipeline, and it freezes with the version ---------------------------


def test_a_generic_plan_is_refused_until_it_names_a_pipeline_which_then_freezes_with_it(creator):
    protocol = protocol_create(user=creator, code="G1", title="t", template="generic")
    draft = protocol.versions.get()
    draft = version_update(
        version=draft,
        user=creator,
        sections={"hypotheses": "h", "design": "d", "analysis": "a"},
        parameters={"seed": "1", "interval_method": "bootstrap", "interval_coverage": "0.95"},
    )
    problems = version_gate(version=draft)
    assert [p.code for p in problems] == ["pipeline_missing"]
    assert "names no analysis pipeline" in problems[0].message
    assert "opb" in problems[0].message and "xstest" in problems[0].message

    draft = version_update(version=draft, user=creator, pipeline="xstest")
    assert version_gate(version=draft) == []
    frozen = version_freeze(version=draft, user=creator)
    assert version_document(version=frozen)["pipeline"] == "xstest"
    assert version_pipeline(frozen) == "xstest"
    amended = version_amend(version=frozen, user=creator)
    assert amended.pipeline == "xstest"
    amended = version_update(version=amended, user=creator, pipeline="opb")
    diff = version_diff(old=frozen, new=amended)
    assert diff["pipeline"] == {"status": "changed", "from": "xstest", "to": "opb"}


def test_an_unknown_pipeline_is_refused_naming_the_known_ones(draft, creator):
    with pytest.raises(ValidationError) as caught:
        version_update(version=draft, user=creator, pipeline="crucible-x")
    assert "'crucible-x' is not an analysis pipeline" in caught.value.message_dict["pipeline"][0]
    draft.refresh_from_db()
    assert draft.pipeline == "opb"


# -- 3. plan-specific parameters -------------------------------------------------------------


def test_a_pi_adds_typed_parameters_which_freeze_with_the_version_and_show_in_the_diff(
    ready_draft, creator
):
    draft = version_update(
        version=ready_draft,
        user=creator,
        new_parameters=[
            {"name": "exclusion_reasons", "value": json.dumps(REASONS)},
            {
                "name": "min_families",
                "kind": "integer",
                "label": "minimum observed families",
                "minimum": 1,
                "value": "3",
            },
            {"name": "report_raw", "kind": "boolean", "required": False, "value": "true"},
            {"name": "axes", "kind": "list", "choices": ["a", "b"], "value": '["a"]'},
        ],
    )
    held = {p.name: p for p in draft.parameters.all()}
    assert held["exclusion_reasons"].kind == "json"  # the declared spec, by name alone
    assert held["exclusion_reasons"].schema["items"]["required"] == ["code", "label"]
    assert held["min_families"].position > held["repetitions"].position
    frozen = version_freeze(version=draft, user=creator)
    document = version_document(version=frozen)
    assert document["parameters"]["min_families"]["value"] == "3"
    assert document["parameters"]["exclusion_reasons"]["schema"]["type"] == "array"
    amended = version_amend(version=frozen, user=creator)
    amended = version_update(version=amended, user=creator, parameters={"min_families": "4"})
    rows = {row["name"]: row for row in version_diff(old=frozen, new=amended)["parameters"]}
    assert rows["min_families"]["status"] == "changed"
    assert (rows["min_families"]["from"], rows["min_families"]["to"]) == ("3", "4")


@pytest.mark.parametrize(
    ("entry", "key", "words"),
    [
        ({"name": "n", "kind": "integer", "value": "2.5"}, "new_parameters[0].value", "whole"),
        ({"name": "n", "kind": "decimal"}, "new_parameters[0].kind", "not a parameter kind"),
        ({"name": "n", "kind": "json"}, "new_parameters[0].schema", "needs a JSON Schema"),
        (
            {"name": "n", "kind": "json", "schema": {"type": "nope"}},
            "new_parameters[0].schema",
            "invalid",
        ),
        (
            {"name": "exclusion_reasons", "value": json.dumps([{"code": "Bad Code"}])},
            "new_parameters[0].value",
            "$[0]",
        ),
        ({"name": "epsilon", "kind": "text"}, "new_parameters[0].name", "already has"),
        ({"name": "n", "kind": "text", "colour": "red"}, "new_parameters[0]", "unknown fields"),
        ({"name": "n", "kind": "number", "minimum": "lots"}, "new_parameters[0].minimum", "number"),
    ],
)
def test_a_bad_new_parameter_is_refused_by_field_path_and_nothing_is_saved(
    draft, creator, entry, key, words
):
    before = AnalysisParameter.objects.filter(version=draft).count()
    with pytest.raises(ValidationError) as caught:
        version_update(
            version=draft,
            user=creator,
            sections={"design": "changed"},
            new_parameters=[entry],
        )
    messages = caught.value.message_dict
    assert key in messages, messages
    assert words in " ".join(messages[key])
    draft.refresh_from_db()
    assert AnalysisParameter.objects.filter(version=draft).count() == before
    assert draft.design != "changed"


def test_the_api_adds_a_parameter_and_answers_400_by_field_path_without_saving(client, pi, draft):
    client.force_login(pi)
    bad = _patch(
        client,
        V,
        {
            "new_parameters": [
                {"name": "exclusion_reasons", "value": json.dumps([{"code": "x", "label": ""}])}
            ]
        },
    )
    assert bad.status_code == 400
    body = json.dumps(bad.json())
    assert "new_parameters[0].value" in body and "$[0].label" in body
    assert not draft.parameters.filter(name="exclusion_reasons").exists()

    unknown = _patch(client, V, {"parameters": {"no_such": "1"}})
    assert unknown.status_code == 400 and "parameters.no_such" in json.dumps(unknown.json())
    wrong_type = _patch(client, V, {"new_parameters": ["not an object"]})
    assert wrong_type.status_code == 400 and "new_parameters" in json.dumps(wrong_type.json())

    ok = _patch(
        client,
        V,
        {"new_parameters": [{"name": "exclusion_reasons", "value": json.dumps(REASONS)}]},
    )
    assert ok.status_code == 200, ok.json()
    held = {p["name"]: p for p in ok.json()["parameters"]}
    assert held["exclusion_reasons"]["kind"] == "json"
    assert ok.json()["pipeline"] == "opb"


def test_the_draft_page_adds_a_parameter_or_shows_the_form_error_naming_the_field(
    client, pi, draft
):
    client.force_login(pi)
    url = f"/protocols/{draft.protocol.code}/v/1.0/parameters/"
    bad = client.post(
        url, {"add-name": "policy", "add-kind": "json", "add-schema": "{not json", "add-value": ""}
    )
    assert bad.status_code == 400
    assert "the schema is not valid JSON" in bad.content.decode()
    bad = client.post(url, {"add-name": "n", "add-kind": "integer", "add-value": "many"})
    assert bad.status_code == 400 and "whole number" in bad.content.decode()
    assert not draft.parameters.filter(name__in=["policy", "n"]).exists()
    ok = client.post(url, {"add-name": "n", "add-kind": "integer", "add-value": "64"})
    assert ok.status_code == 302
    assert draft.parameters.get(name="n").value == "64"
    page = client.get(f"/protocols/{draft.protocol.code}/v/1.0/edit/").content.decode()
    assert 'id="plan-catalogue"' in page and "beta_LF" in page
    assert "how far Family A" in page  # the estimate's meaning


# -- 4. rules only on what exists ------------------------------------------------------------


def test_a_rule_on_an_estimate_no_pipeline_computes_is_refused_naming_rule_and_names(
    ready_draft, creator
):
    table = [
        *ready_draft.decision_table,
        {
            "id": "CRUCIBLE-6.3",
            "finding": "Containment holds.",
            "condition": {"all": [{"estimate": "axis_containment_R2", "op": ">", "value": 0}]},
        },
    ]
    draft = version_update(version=ready_draft, user=creator, decision_table=table)
    problems = [p for p in version_gate(version=draft) if p.code == "rule_unknown_estimate"]
    assert len(problems) == 1
    message = problems[0].message
    assert "rule CRUCIBLE-6.3" in message and "'axis_containment_R2'" in message
    assert "beta_B, beta_A, beta_LF, beta_force" in message


def test_a_rule_naming_a_parameter_the_plan_lacks_names_those_it_has(ready_draft, creator):
    table = [
        {
            "id": "R1",
            "finding": "f",
            "condition": {"all": [{"estimate": "beta_A", "op": "within", "value": "delta"}]},
        }
    ]
    with pytest.raises(ValidationError) as caught:
        version_update(version=ready_draft, user=creator, decision_table=table)
    text = " ".join(caught.value.message_dict["decision_table"])
    assert "rule 1 (R1)" in text and "'delta' is not a parameter" in text and "epsilon" in text


def test_rules_on_a_pipeline_that_evaluates_no_decision_table_are_refused(creator):
    protocol = protocol_create(user=creator, code="X1", title="t", template="xstest")
    draft = version_update(
        version=protocol.versions.get(),
        user=creator,
        decision_table=[
            {
                "id": "X-1",
                "finding": "f",
                "condition": {"all": [{"estimate": "label_rates", "op": ">", "value": 0}]},
            }
        ],
    )
    codes = [p.code for p in version_gate(version=draft)]
    assert "rule_unknown_estimate" in codes


# -- 6. the catalogue ------------------------------------------------------------------------


def test_the_api_serves_every_pipelines_catalogue_and_the_versions_own(client, pi, draft):
    client.force_login(pi)
    every = client.get("/api/v1/pipelines").json()
    assert {c["pipeline"] for c in every} >= {"opb", "xstest"}
    mine = client.get(V + "/catalogue")
    assert mine.status_code == 200
    body = mine.json()
    assert body["pipeline"] == "opb" and "epsilon" in body["held"]
    beta_a = next(e for e in body["estimates"] if e["name"] == "beta_A")
    assert beta_a["kind"] == "coefficient" and beta_a["interval"] and beta_a["meaning"]


def test_the_draft_page_offers_the_pipeline_and_the_new_parameter_kinds(client, pi, draft):
    client.force_login(pi)
    page = client.get(f"/protocols/{draft.protocol.code}/v/1.0/edit/").content.decode()
    assert 'name="plan-pipeline"' in page
    for kind in ("boolean", "list", "json"):
        assert f'value="{kind}"' in page
    assert OPB_VALUES and OPB_SECTIONS  # the shared fixtures' values are the plan's
