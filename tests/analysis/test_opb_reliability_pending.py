"""Issue #32 §1: reliability over every doubly-scored response, with the pre-adjudication values.

A study whose reviewers disagree and whose adjudication is pending must not pass the plan's
reliability minimum by leaving the disputed responses out of α (Krippendorff 2011, "Computing
Krippendorff's alpha-reliability": every pairable value enters). α is checked against the
``krippendorff`` package on a matrix built here from the stored scores, not from our output.
"""

import json

import krippendorff
import numpy as np
import pytest
from django.urls import reverse

from apps.analysis.models import RunState
from apps.raters.models import Score
from tests.factories import opb_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def disputed(run_now):
    # Reviewers whose checklists (and hedge counts, under an "exact" rule) differ on about half
    # the responses: those await adjudication; the rest agree exactly.
    study = opb_study(
        code="PENDING",
        evaluands=1,
        items_per_family=10,
        disagreement=0.5,
        rules={"hedge_count": "exact"},
        disagree_on=("hedge_count",),
        slopes={"A": 0.0, "B": 1.2},
        parameters={"bootstrap_replicates": "200", "agreement_minimum": "0.9"},
    )
    run = run_now(study.version, study.pi)
    assert run.state == RunState.SUCCEEDED, run.error
    return study, json.loads(bytes(run.result.content))["estimates"]


def _reference_alpha(version) -> tuple[float, int]:
    """α (interval) on F_att = 1 − supplied/4 from every primary score stored, by the package."""
    scores = list(
        Score.objects.filter(version=version).values("response_id", "reviewer_id", "values")
    )
    raters = sorted({s["reviewer_id"] for s in scores})
    units = sorted({s["response_id"] for s in scores})
    matrix = np.full((len(raters), len(units)), np.nan)
    for s in scores:
        f_att = 1 - len(s["values"]["units_supplied"]) / 4
        matrix[raters.index(s["reviewer_id"]), units.index(s["response_id"])] = f_att
    return krippendorff.alpha(reliability_data=matrix, level_of_measurement="interval"), len(units)


def test_alpha_counts_the_responses_awaiting_adjudication(disputed):
    study, estimates = disputed
    reliability = estimates["reliability"]
    pending = estimates["counts"]["awaiting_adjudication"]
    assert pending > 20  # the builder's draw: about half disagree
    assert reliability["awaiting_adjudication"] == pending
    expected, n_units = _reference_alpha(study.version)
    assert reliability["n_pairable_units"] == n_units
    assert reliability["alpha"] == pytest.approx(expected, abs=1e-9)
    # Well below the minimum: over the agreed responses alone it would read 1.0.
    assert reliability["alpha"] < 0.9 and reliability["meets_minimum"] is False


def test_a_study_whose_adjudication_is_pending_draws_no_finding(disputed):
    _, estimates = disputed
    decision = next(s for s in estimates["surfaces"][0]["stages"] if s["stage"] == "decision")
    assert decision["evaluated"] is False
    assert "findings" not in decision and "matched" not in decision
    assert decision["adjudication_pending"] is True
    pending = estimates["counts"]["awaiting_adjudication"]
    assert f"{pending} responses await adjudication" in decision["note"]
    assert "reliability below the preregistered minimum" in decision["note"]


def test_the_report_headline_says_adjudication_is_pending(client, disputed, unseal):
    study, estimates = disputed
    unseal(study.version, study.pi)
    client.force_login(study.pi)
    url = reverse(
        "analysis:report",
        kwargs={"code": study.version.protocol.code, "label": "1.1", "number": 1},
    )
    text = client.get(url).content.decode()
    pending = estimates["counts"]["awaiting_adjudication"]
    assert "Adjudication pending:" in text
    head = text.index("Adjudication pending:")
    assert head < text.index("headline-heading")  # before the finding
    assert f"{pending} responses await adjudication" in text
    assert "Not evaluable" in text


def test_agreement_among_agreeing_reviewers_with_nothing_pending_still_finds(run_now):
    study = opb_study(
        code="NOPENDING",
        evaluands=1,
        items_per_family=10,
        disagreement=0.0,
        rules={"hedge_count": "exact"},
        disagree_on=("hedge_count",),
        slopes={"A": 0.0, "B": 1.2},
        parameters={"bootstrap_replicates": "200", "epsilon": "0.5"},
        repetitions=3,
    )
    estimates = json.loads(bytes(run_now(study.version, study.pi).result.content))["estimates"]
    assert "awaiting_adjudication" not in estimates["counts"]
    decision = next(s for s in estimates["surfaces"][0]["stages"] if s["stage"] == "decision")
    assert decision["evaluated"] is True


def test_with_k_above_two_a_response_two_primaries_have_scored_enters_alpha(run_now):
    # k = 3 and the third reviewer has not yet scored every second response: those are unscored
    # (no final value) but doubly scored, so their values are in α all the same.
    study = opb_study(
        code="PARTIAL",
        evaluands=1,
        n_reviewers=3,
        disagreement=0.4,
        last_reviewer_skips=2,
        parameters={"scores_per_response": "3", "bootstrap_replicates": "200"},
    )
    estimates = json.loads(bytes(run_now(study.version, study.pi).result.content))["estimates"]
    expected, n_units = _reference_alpha(study.version)
    reliability = estimates["reliability"]
    assert estimates["counts"]["unscored"] >= n_units // 2 - 1  # the partly scored half
    assert reliability["n_pairable_units"] == n_units
    assert reliability["alpha"] == pytest.approx(expected, abs=1e-9)
