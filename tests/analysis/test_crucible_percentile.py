"""Issue #36 §3: CRUCIBLE never reports a percentile interval known to under-cover.

The pipeline's default and the crucible preset's is the calibrated bootstrap-t. The percentile
interval CRUCIBLE §9.1 preregisters is chosen only explicitly, and is reported only from the 80
families from which the calibration suite shows it covers 93.5 % (docs/analysis.md: 74.0 % at 3
families, 85.8 % at 6, 91.2 % at 10, 92.5 % at 20, 93.2 % at 40, 93.6 % at 80, nominal 95 %).
The freeze gate refuses it for a design of fewer families, and the retired
``percentile_undercoverage_acknowledged`` no longer unlocks it. A plan frozen with it before
still analyses: each percentile interval from fewer than 80 families is "interval unavailable",
with its measured coverage and the bootstrap-t beside it, and its frozen document is unchanged.
"""

import csv
import io
import json

import pytest
from django.core.cache import cache

from apps.analysis.selectors import result_document
from apps.analysis.stats.bootstrap import (
    PERCENTILE_CALIBRATED_CLUSTERS,
    family_cluster_bootstrap,
    percentile_coverage_figure,
    percentile_coverage_measured,
)
from apps.demo.crucible import crucible_draft
from apps.demo.runs import demo_run_analysed
from apps.deviations.services import outcome_unseal
from apps.items.models import Family
from apps.protocols.documents import version_document_bytes
from apps.protocols.gate import version_gate
from apps.protocols.models import Blob
from apps.protocols.plans import PLAN_TEMPLATES
from apps.protocols.services import version_freeze, version_update
from apps.raters.services.machine import machine_scores_import
from apps.responses.models import Attempt
from apps.responses.services import responses_import
from apps.studies.crucible import pipeline
from apps.studies.crucible.pipeline import PERCENTILE_ACKNOWLEDGED, compute, gate_checks
from tests.factories import UserFactory, crucible_inputs, crucible_shaped_draft

ACKNOWLEDGED = {"bootstrap_interval": "percentile", PERCENTILE_ACKNOWLEDGED.name: "true"}
FLOOR = [{"code": "floor", "floors": [{"axis": "axis1", "minimum": 0.2, "on": "lower_bound"}]}]


def _run(inputs, **parameters):
    parameters.setdefault("bootstrap_replicates", "500")
    parameters.setdefault("acceptance_policies", [])
    text = {k: v if isinstance(v, str) else json.dumps(v) for k, v in parameters.items()}
    return compute(inputs, parameters=text, seed=7)


def test_the_crucible_preset_chooses_the_bootstrap_t_and_no_longer_offers_the_acknowledgement():
    specs = {s.name: s.default for s in PLAN_TEMPLATES["crucible"].parameter_specs()}
    assert specs["bootstrap_interval"] == "bootstrap_t"
    assert PERCENTILE_ACKNOWLEDGED.name not in specs
    # Still declared, so plans frozen with it read it as the boolean it was.
    declared = pipeline.DECLARATION.parameter(PERCENTILE_ACKNOWLEDGED.name)
    assert declared is not None and declared.kind == "boolean"
    assert "Retired" in declared.help_text


def test_the_measured_coverage_is_the_suites_figure_or_the_two_around_it():
    assert percentile_coverage_figure(6) == "85.8 % at 6 clusters"
    assert "85.8 % at 6 clusters" in percentile_coverage_measured(6)
    assert "between 91.2 % (10 clusters) and 92.5 % (20 clusters) for 12" in (
        percentile_coverage_measured(12)
    )
    assert "less than the 74.0 % it covered at 3 clusters" in percentile_coverage_measured(2)
    assert percentile_coverage_measured(PERCENTILE_CALIBRATED_CLUSTERS) == ""
    assert percentile_coverage_figure(PERCENTILE_CALIBRATED_CLUSTERS) == ""


@pytest.mark.django_db
class TestTheGate:
    @pytest.fixture(autouse=True)
    def _fresh_verdicts(self):
        cache.clear()
        yield
        cache.clear()

    def _draft(self, code="CRU-P", **parameters):
        pi = UserFactory()
        draft, _ = crucible_draft(user=pi, code=code, parameters=parameters)
        return draft, pi

    def _problems(self, draft):
        return [p for p in version_gate(version=draft) if p.code == "percentile_undercovers"]

    def test_refuses_the_percentile_for_15_families_naming_field_count_threshold_and_figure(self):
        draft, _ = self._draft(bootstrap_interval="percentile")
        (problem,) = self._problems(draft)
        assert problem.message.startswith("bootstrap_interval is percentile")
        assert "the design has 15 scenario families" in problem.message
        assert f"fewer than the {PERCENTILE_CALIBRATED_CLUSTERS}" in problem.message
        assert "93.5 %" in problem.message
        assert "between 91.2 % (10 clusters) and 92.5 % (20 clusters) for 15" in problem.message
        assert "choose bootstrap_t" in problem.message
        assert problem.url.endswith("#param-bootstrap_interval")

    def test_the_acknowledgement_no_longer_unlocks_it(self):
        draft, pi = self._draft(bootstrap_interval="percentile")
        # An amendment of a plan frozen with it would copy it; a PI may still add it by name.
        version_update(
            version=draft,
            user=pi,
            new_parameters=[
                {"name": PERCENTILE_ACKNOWLEDGED.name, "kind": "boolean", "value": "true"}
            ],
        )
        assert draft.parameters.get(name=PERCENTILE_ACKNOWLEDGED.name).value == "true"
        (problem,) = self._problems(draft)
        assert "percentile" in problem.message

    def test_passes_the_presets_bootstrap_t(self):
        draft, _ = self._draft()
        assert draft.parameters.get(name="bootstrap_interval").value == "bootstrap_t"
        assert not draft.parameters.filter(name=PERCENTILE_ACKNOWLEDGED.name).exists()
        assert self._problems(draft) == []

    def test_passes_the_percentile_from_80_families(self, monkeypatch):
        draft = crucible_shaped_draft(
            code="CRU-80",
            families=PERCENTILE_CALIBRATED_CLUSTERS,
            seeds=1,
            rungs=1,
            evaluands=1,
            axes=("scope_discipline",),
            parameters={"bootstrap_interval": "percentile"},
        )
        assert Family.objects.filter(version=draft).count() == PERCENTILE_CALIBRATED_CLUSTERS
        assert gate_checks(draft) == []
        # One family short of the threshold is refused.
        monkeypatch.setattr(pipeline, "PERCENTILE_CALIBRATED_CLUSTERS", 81)
        (problem,) = gate_checks(draft)
        assert "the design has 80 scenario families, fewer than the 81" in problem.message

    def test_the_api_freeze_is_refused_with_the_message(self, client):
        draft, pi = self._draft(code="CRU-API", bootstrap_interval="percentile")
        client.force_login(pi)
        refused = client.post(
            "/api/v1/protocols/CRU-API/versions/1.0/freeze", "{}", content_type="application/json"
        )
        assert refused.status_code == 400
        problems = refused.json()["problems"]
        (problem,) = [p for p in problems if p["code"] == "percentile_undercovers"]
        assert "choose bootstrap_t" in problem["message"]
        assert problem["url"] == "/protocols/CRU-API/v/1.0/edit/#param-bootstrap_interval"
        draft.refresh_from_db()
        assert draft.state == "draft"


def test_below_80_families_a_percentile_plan_reports_no_percentile_interval():
    inputs = crucible_inputs(evaluands=1, families=12, rungs=1, axes=1)
    legacy = _run(inputs, acceptance_policies=FLOOR, **ACKNOWLEDGED)
    calibrated = _run(inputs, acceptance_policies=FLOOR)
    (cell,), (other,) = legacy["axes"], calibrated["axes"]
    assert cell["estimate"] == other["estimate"]
    assert cell["interval"] is None and cell["interval_available"] is False
    assert cell["note"].startswith("interval unavailable: 12 families contributed, fewer than")
    assert f"the {PERCENTILE_CALIBRATED_CLUSTERS} from which the calibration suite" in cell["note"]
    assert "between 91.2 % (10 clusters) and 92.5 % (20 clusters)" in cell["percentile_coverage"]
    # Beside it, the bootstrap-t the plan would have had: same data, same seed.
    assert "bootstrap-t" in cell["calibrated_interval"]["method"]
    assert cell["calibrated_interval"]["interval"] == other["interval"] is not None
    assert "percentile_coverage" not in other and "calibrated_interval" not in other
    # What the plan froze is recorded; it changes nothing.
    block = legacy["interval"]
    assert block["bootstrap_interval"] == "percentile"
    assert block["percentile_undercoverage_acknowledged"] is True
    assert block["required_families"] == PERCENTILE_CALIBRATED_CLUSTERS
    assert "no longer changes that" in block["percentile_note"]
    assert legacy["settings"][PERCENTILE_ACKNOWLEDGED.name]["value"] == "true"
    assert "percentile_note" not in calibrated["interval"]
    # The verdicts read no interval the plan did not freeze: a lower-bound floor is not met.
    (verdict,) = legacy["acceptance"]
    assert verdict["rungs"][0]["failures"] == [
        "axis1: interval unavailable, so its lower bound cannot meet the floor 0.2"
    ]
    (met,) = calibrated["acceptance"]
    assert met["rungs"][0]["acceptable"] is True


def test_below_ten_families_the_bootstrap_t_beside_it_says_why_it_is_unavailable_too():
    inputs = crucible_inputs(evaluands=1, families=6, rungs=1, axes=1)
    (cell,) = _run(inputs, bootstrap_interval="percentile")["axes"]
    assert cell["interval"] is None
    assert "85.8 % at 6 clusters" in cell["percentile_coverage"]
    assert cell["calibrated_interval"]["interval"] is None
    assert "fewer than the 10 the bootstrap-t needs" in cell["calibrated_interval"]["note"]


def test_from_80_families_the_percentile_interval_is_reported():
    inputs = crucible_inputs(
        evaluands=1, families=PERCENTILE_CALIBRATED_CLUSTERS, seeds=1, rungs=1, axes=1
    )
    result = _run(inputs, bootstrap_interval="percentile")
    (cell,) = result["axes"]
    low, high = cell["interval"]
    assert low < cell["estimate"] < high
    assert "percentile_coverage" not in cell and "calibrated_interval" not in cell
    assert "percentile" in result["interval"]["method"]
    # It is the percentile interval of the family values (no other method stands in).
    values = cell["family_values"]
    direct = family_cluster_bootstrap(
        list(values.values()),
        list(values),
        seed=pipeline.sub_seed(7, "crucible", "E1", "R0", "axis1"),
        replicates=500,
        min_clusters=3,
        method="percentile",
    )
    assert [low, high] == pytest.approx(list(direct.interval))


def test_confirmatory_comparisons_withhold_it_too():
    truth = {"E1": 0.8, "E2": 0.5}
    inputs = crucible_inputs(
        evaluands=2, families=12, rungs=1, axes=1, truth=lambda e, r, a: truth[e]
    )
    comparisons = [{"axis": "axis1", "rung": "R0", "evaluands": ["E1", "E2"]}]
    result = _run(inputs, confirmatory_comparisons=comparisons, **ACKNOWLEDGED)
    (comparison,) = result["comparisons"]["confirmatory"]
    assert comparison["interval"] is None
    assert "fewer than the 80 from which" in comparison["note"]
    assert "92.5 %" in comparison["percentile_coverage"]
    low, high = comparison["calibrated_interval"]["interval"]
    assert low < comparison["estimate"] < high
    assert comparison["significant"]  # the test is the plan's t-test, whatever the interval


def _csv(columns, rows) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(rows)
    return out.getvalue().encode()


@pytest.mark.django_db
def test_a_plan_frozen_with_the_acknowledgement_still_analyses_and_keeps_its_document(
    client, monkeypatch
):
    cache.clear()
    families = 12
    policy = [
        {
            "code": "floor",
            "floors": [{"axis": "scope_discipline", "minimum": 0.2, "on": "lower_bound"}],
        }
    ]
    draft = crucible_shaped_draft(
        code="CRU-LEGACY",
        families=families,
        seeds=1,
        rungs=1,
        evaluands=2,
        axes=("scope_discipline",),
        parameters={
            "bootstrap_interval": "percentile",
            "bootstrap_replicates": "999",
            "acceptance_policies": json.dumps(policy),
        },
    )
    pi = draft.created_by
    version_update(
        version=draft,
        user=pi,
        new_parameters=[{"name": PERCENTILE_ACKNOWLEDGED.name, "kind": "boolean", "value": "true"}],
    )
    # Such plans were frozen before issue #36 §3 was finished, when the gate let the
    # acknowledgement keep the percentile for a design of fewer than 80 families. No path
    # freezes one now, so the freeze alone runs under that rule's threshold.
    with monkeypatch.context() as patch:
        patch.setattr(pipeline, "PERCENTILE_CALIBRATED_CLUSTERS", 3)
        version = version_freeze(version=draft, user=pi)
    frozen_sha = version.sha256
    frozen_bytes = bytes(Blob.objects.get(sha256=frozen_sha).content)
    assert b'"percentile_undercoverage_acknowledged"' in frozen_bytes

    rows = [
        [f"F{f:02d}-S1", "R0", evaluand, "completed", "true", "transcript"]
        for f in range(1, families + 1)
        for evaluand in ("E1", "E2")
    ]
    columns = ["item", "level", "evaluand", "terminal_outcome", "evidence_gate", "response"]
    responses_import(version=version, user=pi, data=_csv(columns, rows), filename="e.csv")
    grades = [
        [
            attempt.administration.position,
            attempt.number,
            "harness",
            round(0.4 + 0.02 * (attempt.administration.position % 7), 3),
            "false",
        ]
        for attempt in Attempt.objects.filter(version=version).select_related("administration")
    ]
    header = ["position", "attempt", "scorer", "scope_discipline", "rule_of_engagement_violation"]
    machine_scores_import(version=version, user=pi, data=_csv(header, grades), filename="g.csv")

    run = demo_run_analysed(version=version, pi=pi)
    assert run.state == "succeeded", run.error
    estimates = result_document(run)["estimates"]
    assert estimates["interval"]["percentile_undercoverage_acknowledged"] is True
    cells = estimates["axes"]
    assert len(cells) == 2
    for cell in cells:
        assert cell["n_families"] == families
        assert cell["interval"] is None
        assert f"fewer than the {PERCENTILE_CALIBRATED_CLUSTERS} from which" in cell["note"]
        low, high = cell["calibrated_interval"]["interval"]
        assert low < cell["estimate"] < high
    assert all(not v["rungs"][0]["acceptable"] for v in estimates["acceptance"])

    # The frozen document, its hash and its blob are what they were.
    version.refresh_from_db()
    assert version.sha256 == frozen_sha
    assert version_document_bytes(version=version)[1] == frozen_sha
    assert bytes(Blob.objects.get(sha256=frozen_sha).content) == frozen_bytes

    # And the report page says why its percentile intervals are not reported.
    outcome_unseal(version=version, user=pi, confirmation="CRU-LEGACY")
    client.force_login(pi)
    page = client.get(f"/protocols/CRU-LEGACY/v/1.0/analysis/{run.number}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="interval-calibration"' in html
    assert "which no longer changes this" in html
    assert "the plan's percentile interval is not reported" in html
