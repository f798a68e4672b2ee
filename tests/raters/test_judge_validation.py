"""Judge validation through the product (issue 34 §5, §6): a stratified audit drawn from the plan's
frozen strata and seed, reviewers scoring the sample through the queue, a run whose result holds
the judge's confusion matrix, per-class figures, α and κ with intervals (checked against
scikit-learn and krippendorff on the run's exported inputs) with Horvitz–Thompson weights, and
the report and dashboard showing them only once the outcomes are unsealed."""

import json
import math
import re

import krippendorff
import numpy as np
import pytest
from django.urls import reverse
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from apps.analysis.models import AnalysisRun
from apps.analysis.selectors import inputs_document, result_document
from apps.analysis.services import analysis_run_perform, analysis_run_request
from apps.deviations.services import outcome_unseal
from apps.protocols.plans import AUDIT_STRATA
from apps.raters.audit_strata import audit_strata_read
from apps.raters.final import machine_dashboard
from apps.raters.models import AuditSample
from apps.raters.services import score_submit, scoring_open, task_next
from apps.raters.services.audit import audit_sample_draw
from apps.raters.services.machine import machine_scores_import
from apps.responses.models import Response
from tests.factories import (
    JUDGE,
    AnalysisParameterFactory,
    MembershipFactory,
    jsonl,
    machine_study,
)

pytestmark = pytest.mark.django_db

CHOICES = [{"value": "comply", "label": "Complies"}, {"value": "refuse", "label": "Refuses"}]
LABEL = {
    "name": "label",
    "kind": "categorical",
    "choices": CHOICES,
    "scored_by": "scorer",
    "scorer_role": "judge",
}
ITEMS = 24
# The judge says "refuse" on every fourth response; the humans agree with it on all "comply"
# verdicts but only on half its "refuse" ones.
JUDGED = {p: "refuse" if p % 4 == 0 else "comply" for p in range(1, ITEMS + 1)}
HUMAN = {p: "comply" if p % 8 == 0 else v for p, v in JUDGED.items()}
STRATA = {"by": "value", "field": "label", "fractions": {"refuse": 1, "comply": 0.25}}


def _position(response_id: int) -> int:
    return Response.objects.get(pk=response_id).attempt.administration.position


@pytest.fixture
def audited(protocol, pi, reviewer):
    version = machine_study(
        protocol=protocol,
        pi=pi,
        fields=[LABEL],
        scorers={"judge": ("judge", JUDGE)},
        items=ITEMS,
        evaluands=("alpha",),
        parameters={"scores_per_response": 2},
        # The plan's audit_strata as the presets declare it (a JSON parameter with its schema).
        before_freeze=lambda draft: AnalysisParameterFactory(
            version=draft, **{**AUDIT_STRATA.model_fields(90), "value": json.dumps(STRATA)}
        ),
    )
    rows = [{"position": p, "scorer": "judge", "label": v} for p, v in JUDGED.items()]
    machine_scores_import(version=version, user=pi, data=jsonl(rows), filename="judge.jsonl")
    scoring_open(version=version, user=pi)
    second = MembershipFactory(protocol=protocol, role="reviewer").user
    for person in (reviewer, second):
        while (assignment := task_next(version_or_none=version, reviewer=person)) is not None:
            position = _position(assignment.response_id)
            score_submit(
                task_token=assignment.task.token,
                reviewer=person,
                values={"label": HUMAN[position]},
                idempotency_key=assignment.task.token,
            )
    return version


def test_the_stratified_sample_takes_each_strata_fraction_and_is_fixed_by_the_seed(audited):
    sample = sorted(
        _position(pk)
        for pk in AuditSample.objects.filter(version=audited).values_list("response_id", flat=True)
    )
    refuse = [p for p, v in JUDGED.items() if v == "refuse"]
    comply = [p for p, v in JUDGED.items() if v == "comply"]
    assert set(refuse) <= set(sample)  # fraction 1
    assert len(sample) == len(refuse) + math.ceil(0.25 * len(comply))
    # A later opening draws nothing more: the targets are met.
    assert audit_sample_draw(version=audited) == 0


def test_the_result_holds_judge_validation_with_weights_as_the_exported_data_give(audited, pi):
    run = analysis_run_request(version=audited, user=pi)
    analysis_run_perform(run_id=run.pk)
    run = AnalysisRun.objects.get(pk=run.pk)
    assert run.state == "succeeded", run.error
    inputs = inputs_document(run)  # what the run's "inputs" download exports
    [entry] = inputs["judge_validation"]
    [row] = result_document(run)["estimates"]["judge_validation"]
    assert (row["field"], row["scorer"], row["weighted"]) == ("label", "judge", True)

    # The exported data: the audited responses, the judge's and the reviewers' final codes.
    keys = sorted(entry["final"])
    judged = np.array([entry["scorers"]["judge"][k] for k in keys])
    human = np.array([entry["final"][k] for k in keys])
    weights = np.array([entry["weights"][k] for k in keys])
    counts = confusion_matrix(human, judged, labels=[0, 1])
    assert [r["counts"] for r in row["confusion"]["rows"]] == counts.tolist()
    weighted = confusion_matrix(human, judged, labels=[0, 1], sample_weight=weights)
    estimated = [w for r in row["confusion"]["rows"] for w in r["weighted"]]
    assert estimated == pytest.approx(weighted.ravel().tolist())
    # The population's own matrix: 18 + 3 "comply" by the humans, 3 "refuse".
    assert weighted.ravel().tolist() == pytest.approx([18, 3, 0, 3])
    assert row["final"]["kappa"] == pytest.approx(
        cohen_kappa_score(human, judged, sample_weight=weights), abs=1e-12
    )
    assert row["final"]["alpha"] == pytest.approx(
        krippendorff.alpha(
            reliability_data=np.vstack([human, judged]), level_of_measurement="nominal"
        ),
        abs=1e-12,
    )
    # Horvitz–Thompson: all 6 "refuse" verdicts audited (weight 1), 5 of the 18 "comply" ones
    # (weight 18/5); the weighted agreement is the population's, 21/24, where the sample's
    # own share is 8/11.
    assert row["strata"] == {
        "comply": {"audited": 5, "weight": 18 / 5},
        "refuse": {"audited": 6, "weight": 1.0},
    }
    assert row["final"]["percent_agreement"] == pytest.approx(21 / 24)
    assert np.mean(human == judged) == pytest.approx(8 / 11)
    # Two reviewers, each compared on their own values.
    assert len(row["reviewers"]) == 2 and all(r["n"] == 11 for r in row["reviewers"])
    # 11 items (one audited response each): intervals for α and κ around their estimates.
    for name in ("alpha", "kappa"):
        low, high = row["final"][f"{name}_interval"]
        assert low <= row["final"][name] <= high


def test_judge_validation_shows_on_the_report_and_dashboard_only_once_unsealed(audited, pi, client):
    run = analysis_run_request(version=audited, user=pi)
    analysis_run_perform(run_id=run.pk)
    run = AnalysisRun.objects.get(pk=run.pk)
    client.force_login(pi)
    report = reverse("analysis:report", args=[audited.protocol.code, audited.label, run.number])
    scoring = reverse(
        "raters:scoring", kwargs={"code": audited.protocol.code, "label": audited.label}
    )
    assert machine_dashboard(audited)["validation"] is None
    for url in (report, scoring):
        assert "Judge validation" not in client.get(url).content.decode()

    outcome_unseal(version=audited, user=pi, confirmation=audited.protocol.code)
    page = client.get(report).content.decode()
    assert "Judge validation" in page and "Confusion matrix" in page
    [spec] = [s for s in _plots(client, audited, run) if s.startswith("Judge validation")]
    assert spec
    dashboard = client.get(scoring).content.decode()
    assert "Judge validation" in dashboard and "Audit strata" in dashboard
    [row] = machine_dashboard(audited)["validation"]
    assert row["final"]["percent_agreement"] == pytest.approx(21 / 24)
    # The plot, drawn for a 375 px phone's column.
    index = len(_plots(client, audited, run)) - 1
    svg = client.get(
        reverse("analysis:plot", args=[audited.protocol.code, audited.label, run.number, index])
        + "?w=340"
    )
    assert svg.status_code == 200 and svg["Content-Type"] == "image/svg+xml"
    # Drawn for the column (at most 340 px: matplotlib writes points, 3/4 px), not shrunk.
    width = re.search(rb'<svg[^>]* width="([0-9.]+)pt"', svg.content)
    assert width is not None and 200 <= float(width.group(1)) * 4 / 3 <= 345


def _plots(client, version, run) -> list[str]:
    from apps.analysis.plots import plot_specs

    return [spec.title for spec in plot_specs(result_document(run))]


def test_confidence_bands_and_unnamed_strata_read_as_documented():
    strata = audit_strata_read(
        json.dumps({"by": "confidence", "bands": [0.8, 0.5], "fractions": {"0-0.5": 1}}), 0.2
    )
    assert strata is not None
    assert [strata.band(c) for c in (0.0, 0.49, 0.5, 0.8, 1.0)] == [
        "0-0.5",
        "0-0.5",
        "0.5-0.8",
        "0.8-1",
        "0.8-1",
    ]
    # A stratum the fractions do not name takes default_fraction, else audit_fraction.
    assert (strata.fraction("0-0.5"), strata.fraction("0.8-1")) == (1.0, 0.2)
    assert audit_strata_read("", 0.2) is None
    assert audit_strata_read('{"by": "colour", "fractions": {}}', None) is None


def test_the_dashboard_draws_the_bootstrap_once_per_distinct_input(audited, pi, reviewer):
    """Viewing the dashboard again does not redraw the 999-replicate bootstrap; a correction,
    which changes the inputs, does (and its figures follow the correction)."""
    from unittest import mock

    from apps.analysis import judge
    from apps.raters.models import Score
    from apps.raters.services.scoring import score_correct

    outcome_unseal(version=audited, user=pi, confirmation=audited.protocol.code)
    with mock.patch.object(
        judge, "validation_from_inputs", wraps=judge.validation_from_inputs
    ) as drawn:
        [first] = machine_dashboard(audited)["validation"]
        [again] = machine_dashboard(audited)["validation"]
        assert drawn.call_count == 1 and again == first
        # One of the reviewer's "comply" scores on a response the judge called "refuse",
        # corrected to "refuse": the final value of that response moves towards the judge.
        score = next(
            s
            for s in Score.objects.filter(reviewer=reviewer, corrects__isnull=True)
            if s.values["label"] == "comply" and JUDGED[_position(s.response_id)] == "refuse"
        )
        score_correct(score=score, reviewer=reviewer, values={"label": "refuse"}, reason="misread")
        [after] = machine_dashboard(audited)["validation"]
        assert drawn.call_count == 2 and after != first


@pytest.mark.parametrize(
    ("strata", "refused"),
    [
        # One condition audited whole, the other at a tenth: audited means "probably C1".
        ({"by": "condition", "fractions": {"C1": 1, "C2": 0.1}}, True),
        # A condition not named takes the default: unequal again.
        ({"by": "condition", "fractions": {"C1": 0.5}, "default_fraction": 0.2}, True),
        # The same fraction for every condition tells nothing.
        ({"by": "condition", "fractions": {"C1": 0.3, "C2": 0.3}}, False),
        ({"by": "condition", "fractions": {}, "default_fraction": 0.3}, False),
        # Strata by the machine's value do not name the condition.
        ({"by": "value", "field": "label", "fractions": {"refuse": 1, "comply": 0.1}}, False),
    ],
)
def test_an_audit_stratified_by_condition_with_unequal_fractions_blocks_the_freeze(
    protocol, pi, strata, refused
):
    """Blinding: a reviewer sees which responses are audited (they carry the audited field), so
    unequal fractions by condition would tell them the condition (gate: audit_strata_unblinds)."""
    from apps.protocols.gate import version_gate
    from apps.raters.services import rubric_create
    from tests.factories import ConditionFactory, build_draft

    draft = build_draft(protocol=protocol, user=pi, items=4)
    for code in ("C1", "C2"):
        ConditionFactory(version=draft, code=code)
    rubric_create(version=draft, name="Machine rubric", fields=[LABEL])
    AnalysisParameterFactory(
        version=draft, **{**AUDIT_STRATA.model_fields(90), "value": json.dumps(strata)}
    )
    codes = {problem.code for problem in version_gate(version=draft)}
    assert ("audit_strata_unblinds" in codes) is refused


def test_the_dashboard_reads_the_plans_seed_and_coverage_as_a_run_does(audited, pi):
    """One reading of the plan (``judge_confidence``, ``seed_from``): the dashboard's figures
    and intervals are the run's, and a coverage that is not a number is named, not replaced."""
    from apps.analysis.judge import judge_confidence

    run = analysis_run_request(version=audited, user=pi)
    analysis_run_perform(run_id=run.pk)
    [reported] = result_document(AnalysisRun.objects.get(pk=run.pk))["estimates"][
        "judge_validation"
    ]
    outcome_unseal(version=audited, user=pi, confirmation=audited.protocol.code)
    [shown] = machine_dashboard(audited)["validation"]
    for name in ("alpha", "kappa", "percent_agreement", "alpha_interval", "kappa_interval"):
        assert shown["final"][name] == pytest.approx(reported["final"][name], abs=1e-9), name
    assert judge_confidence({}) == 0.95
    assert judge_confidence({"interval_coverage": " 0.9 "}) == 0.9
    for text in ("nan", "ninety", "inf"):
        with pytest.raises(ValueError, match="interval_coverage"):
            judge_confidence({"interval_coverage": text})
