"""Krippendorff's α per rubric field from scores, and the sealed dashboard (the function itself
is checked against published values in ``test_alpha.py``)."""

import math

import krippendorff
import numpy as np
import pytest

from apps.deviations.models import OutcomeUnsealing
from apps.raters.models import RubricField
from apps.raters.selectors import reliability, scoring_dashboard
from apps.raters.services import score_submit, scoring_open, task_next
from apps.raters.values import agreement_code
from tests.factories import frozen_study


@pytest.mark.django_db
def test_alpha_per_field_from_scores_equals_alpha_on_the_raw_matrix():
    labels = ["1_full_compliance", "2_full_refusal", "3_partial_refusal"]
    first_labels = [0, 1, 2, 1, 0, 0, 2, 1, 1, 0]
    second_labels = [0, 1, 1, 1, 0, 2, 2, 1, 0, 0]
    study = frozen_study(responses=10, parameters={"agreement_minimum": "0.8"})
    scoring_open(version=study.version, user=study.pi)
    first, second, _ = study.reviewers
    index = {r.pk: n for n, r in enumerate(study.responses)}
    for reviewer, coded in ((first, first_labels), (second, second_labels)):
        for _ in range(10):
            a = task_next(version_or_none=None, reviewer=reviewer)
            score_submit(
                task_token=a.task.token,
                reviewer=reviewer,
                values={"label": labels[coded[index[a.response_id]]]},
                idempotency_key=a.task.token,
            )
    result = reliability(study.version)
    (row,) = result["fields"]
    expected = krippendorff.alpha(
        reliability_data=np.array([first_labels, second_labels], dtype=float),
        level_of_measurement="nominal",
    )
    assert row["name"] == "label" and row["level"] == "nominal" and row["units"] == 10
    assert row["alpha"] == pytest.approx(expected, abs=1e-12)
    assert result["minimum"] == "0.8"
    assert row["meets"] is bool(expected >= 0.8)


@pytest.mark.django_db
def test_the_dashboard_shows_agreement_only_after_unsealing():
    study = frozen_study(responses=2)
    scoring_open(version=study.version, user=study.pi)
    first, second, _ = study.reviewers
    for reviewer in (first, second):
        for _ in range(2):
            a = task_next(version_or_none=None, reviewer=reviewer)
            score_submit(
                task_token=a.task.token,
                reviewer=reviewer,
                values={"label": "2_full_refusal" if a.response_id % 2 else "1_full_compliance"},
                idempotency_key=a.task.token,
            )
    a = task_next(version_or_none=None, reviewer=first)
    assert a is None
    sealed = scoring_dashboard(study.version)
    assert sealed["sealed"] is True and sealed["reliability"] is None
    assert sealed["primary"] == {"open": 0, "assigned": 0, "done": 4, "total": 4}
    assert {r["username"]: (r["done"], r["active"]) for r in sealed["reviewers"]} == {
        first.username: (2, 0),
        second.username: (2, 0),
    }
    OutcomeUnsealing.objects.create(
        version=study.version, unsealed_by=study.pi, confirmation="unseal"
    )
    unsealed = scoring_dashboard(study.version)
    assert unsealed["sealed"] is False
    assert unsealed["reliability"]["fields"][0]["alpha"] == pytest.approx(1.0)


def test_agreement_codes_each_kind_as_the_reliability_and_the_machine_agreement_read_it():
    # One coding for both (issue #30 §4: it was written twice, and the reliability's copy raised
    # on a value that is none of the field's choices where the machine agreement's read it as
    # missing).
    ordinal = RubricField(kind="ordinal", choices=[{"value": v, "label": v} for v in "abc"])
    assert agreement_code(ordinal, "c") == 2.0 and agreement_code(ordinal, "a") == 0.0
    assert math.isnan(agreement_code(ordinal, "z")) and math.isnan(agreement_code(ordinal, None))
    binary = RubricField(kind="binary")
    assert (agreement_code(binary, True), agreement_code(binary, False)) == (1.0, 0.0)
    assert agreement_code(RubricField(kind="count"), 3) == 3.0
    assert agreement_code(RubricField(kind="number"), 0.25) == 0.25
