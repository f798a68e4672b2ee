"""Two scorers in one role (issue 34 §7): a final value taken only when they agree ("equal or
nothing") can leave responses unresolved. The computability gate warns of such a rule before the
freeze, and a run's result and report count and list the unresolved responses."""

import pytest
from django.template.loader import render_to_string
from django.urls import reverse

from apps.analysis.computability import computability_notes
from apps.analysis.inputs import unresolved_finals
from apps.analysis.models import AnalysisRun
from apps.analysis.selectors import result_document
from apps.analysis.services import analysis_run_perform, analysis_run_request
from apps.deviations.services import outcome_unseal
from apps.raters.final import final_values, unresolvable_rules
from apps.raters.services.machine import machine_scores_import
from apps.responses.models import Response
from tests.factories import JUDGE, jsonl, machine_study

pytestmark = pytest.mark.django_db

OTHER = {**JUDGE, "model": "judge-model-2026-07"}
CHOICES = [{"value": "comply", "label": "Complies"}, {"value": "refuse", "label": "Refuses"}]
LABEL = {
    "name": "label",
    "kind": "categorical",
    "choices": CHOICES,
    "scored_by": "scorer",
    "scorer_role": "judge",
}
LENGTH = {"name": "length", "kind": "number", "scored_by": "scorer", "scorer_role": "judge"}
A = ["comply", "refuse", "comply", "refuse", "comply", "refuse"]
B = ["comply", "comply", "comply", "refuse", "refuse", "refuse"]  # disagree at 2 and 5


def _study(protocol, pi, scorers):
    return machine_study(
        protocol=protocol,
        pi=pi,
        fields=[LABEL, LENGTH],
        scorers=scorers,
        items=6,
        evaluands=("alpha",),
    )


def _import(version, pi, code, labels):
    rows = [
        {"position": p, "scorer": code, "label": v, "length": p * 10}
        for p, v in enumerate(labels, start=1)
    ]
    machine_scores_import(version=version, user=pi, data=jsonl(rows), filename=f"{code}.jsonl")


def test_one_scorer_per_role_or_a_field_with_a_mean_draws_no_warning(protocol, pi):
    version = _study(protocol, pi, {"a": ("judge", JUDGE)})
    assert unresolvable_rules(version) == []


def test_two_scorers_that_disagree_leave_responses_unresolved_and_say_so(protocol, pi, client):
    version = _study(protocol, pi, {"a": ("judge", JUDGE), "b": ("judge", OTHER)})
    [warning] = unresolvable_rules(version)  # the number field has a mean: no warning
    assert "'label'" in warning and "2 scorers (a, b)" in warning and "unresolved" in warning
    assert any("'label'" in note for note in computability_notes(version))

    _import(version, pi, "a", A)
    _import(version, pi, "b", B)
    rows = {
        Response.objects.get(pk=r["response_id"]).attempt.administration.position: r
        for r in final_values(version)
    }
    assert [p for p, r in sorted(rows.items()) if r.get("unresolved")] == [2, 5]
    assert rows[2]["final"]["label"] is None and rows[2]["unresolved"] == ["label"]
    assert rows[2]["final"]["length"] == 20  # the number field: the scorers' mean
    assert rows[1]["final"]["label"] == "comply"
    expected = [{"response": "2.1", "fields": ["label"]}, {"response": "5.1", "fields": ["label"]}]
    assert unresolved_finals(version) == expected

    run = analysis_run_request(version=version, user=pi)
    analysis_run_perform(run_id=run.pk)
    run = AnalysisRun.objects.get(pk=run.pk)
    assert run.state == "succeeded", run.error
    result = result_document(run)
    assert result["estimates"]["unresolved_finals"] == {"count": 2, "responses": expected}

    # The report's section (templates/analysis/_unresolved.html, included by run_report.html).
    page = render_to_string("analysis/_unresolved.html", {"estimates": result["estimates"]})
    assert "2 responses have no final value" in page
    assert "<td>2.1</td><td>label</td>" in page and "<td>5.1</td><td>label</td>" in page

    # And on the report page itself, once the outcomes are unsealed: a result whose plan has no
    # decision table leads with its primary estimates, and the section is there.
    outcome_unseal(version=version, user=pi, confirmation=version.protocol.code)
    client.force_login(pi)
    response = client.get(
        reverse("analysis:report", args=[version.protocol.code, version.label, run.number])
    )
    assert response.status_code == 200
    assert "2 responses have no final value" in response.content.decode()
