"""Judge validation and agreement when a scorer's epochs are combined (issue 34 §4–§6): the
analysis reads the combined value, but a reviewer reads one epoch's response, so the scorer is
compared with them response by response, on the value it gave that response, and a stratified
audit's strata are drawn on the same values (``apps.raters.final.comparison_inputs``)."""

import json

import pytest

from apps.analysis.judge import validation_from_inputs
from apps.raters.audit_strata import audit_strata_read, response_strata
from apps.raters.final import agreement_inputs, final_values, validation_inputs
from apps.raters.models import MachineScore
from apps.raters.services import score_submit, scoring_open, task_next
from apps.raters.services.machine import machine_scores_import
from apps.responses.models import Response
from tests.factories import JUDGE, jsonl, machine_study

pytestmark = pytest.mark.django_db

JUDGED = {"name": "judged", "kind": "binary", "scored_by": "scorer", "scorer_role": "judge"}
ITEMS = 12


def _verdict(repetition: int) -> bool:
    # Each item's first epoch true, its second false: ``at_least:2`` combines them to false.
    return repetition == 1


@pytest.fixture
def audited(protocol, pi, reviewer):
    version = machine_study(
        protocol=protocol,
        pi=pi,
        fields=[JUDGED],
        scorers={"judge": ("judge", JUDGE)},
        items=ITEMS,
        evaluands=("alpha",),
        repetitions=2,
        epochs={"judge": "at_least:2"},
        parameters={"scores_per_response": 1, "audit_fraction": 1},
    )
    repetition = dict(
        Response.objects.filter(version_id=version.pk).values_list(
            "attempt__administration__position", "attempt__administration__repetition"
        )
    )
    rows = [
        {"position": p, "scorer": "judge", "judged": _verdict(r)} for p, r in repetition.items()
    ]
    machine_scores_import(version=version, user=pi, data=jsonl(rows), filename="judge.jsonl")
    scoring_open(version=version, user=pi)
    # The reviewer agrees with the judge on every response.
    while (assignment := task_next(version_or_none=version, reviewer=reviewer)) is not None:
        response = Response.objects.get(pk=assignment.response_id)
        score_submit(
            task_token=assignment.task.token,
            reviewer=reviewer,
            values={"judged": _verdict(response.attempt.administration.repetition)},
            idempotency_key=assignment.task.token,
        )
    return version


def test_the_analysis_reads_the_combined_value(audited):
    finals = [row["final"]["judged"] for row in final_values(audited)]
    assert finals.count(False) == ITEMS and finals.count(None) == ITEMS  # one per item


def test_a_judge_that_agrees_with_the_reviewer_on_every_response_is_validated_as_such(audited):
    [entry] = validation_inputs(audited)
    assert len(entry["final"]) == 2 * ITEMS  # every audited response, both epochs
    assert entry["scorers"]["judge"] == entry["final"]  # the judge's own value of each
    entry["clusters"] = {key: key for key in entry["final"]}
    [row] = validation_from_inputs([entry], seed=1)
    assert row["final"]["percent_agreement"] == 1.0 and row["final"]["kappa"] == 1.0
    [agreement] = agreement_inputs(audited)
    assert agreement["coders"]["judge"] == agreement["coders"]["reviewers"] == entry["final"]


def test_the_audit_strata_are_each_responses_own_value_the_unit_validation_compares(audited):
    strata = audit_strata_read(
        json.dumps({"by": "value", "field": "judged", "fractions": {"true": 1, "false": 0.5}}),
        None,
    )
    assert strata is not None
    responses = list(MachineScore.objects.values_list("response_id", flat=True))
    of = response_strata(audited, strata, responses)
    [entry] = validation_inputs(audited)
    assert {str(pk): of[pk] for pk in responses} == {
        key: "true" if code == 1.0 else "false" for key, code in entry["scorers"]["judge"].items()
    }
