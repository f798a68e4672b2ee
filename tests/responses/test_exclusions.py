"""Exclusions: a reason code, the decision time, the person, and whether outcome data were
visible — from the outcome seal, never from the caller. Excluded responses stay visible and
counted."""

import pytest
from django.core.exceptions import ValidationError

from apps.deviations.models import LogEntry
from apps.deviations.services import outcome_unseal
from apps.responses.models import Attempt, Exclusion
from apps.responses.selectors import outcome_counts, responses_summary
from apps.responses.services import exclusion_record, responses_import
from tests.factories import AnalysisParameterFactory, answer_rows, build_draft, csv_bytes, freeze

pytestmark = pytest.mark.django_db


@pytest.fixture
def attempt(frozen, pi):
    responses_import(version=frozen, user=pi, data=csv_bytes(answer_rows(frozen)), filename="a.csv")
    return Attempt.objects.filter(version=frozen).order_by("administration__position").first()


def test_an_exclusion_is_recorded_sealed_and_logged(attempt, pi):
    exclusion = exclusion_record(
        attempt=attempt, reason_code="record_corrupt", rationale="Truncated at 4 kB.", user=pi
    )
    assert exclusion.outcome_visible is False
    assert exclusion.decided_by == pi
    assert exclusion.decided_at is not None
    entry = LogEntry.objects.get(kind="exclusion")
    assert entry.actor == pi
    assert "record_corrupt: Truncated at 4 kB." in entry.rationale
    assert entry.outcome_visible is False


def test_an_exclusion_after_unsealing_records_that_outcomes_were_visible(attempt, pi):
    outcome_unseal(version=attempt.version, user=pi, confirmation=attempt.version.protocol.code)
    exclusion = exclusion_record(
        attempt=attempt, reason_code="record_corrupt", rationale="Truncated.", user=pi
    )
    assert exclusion.outcome_visible is True
    assert LogEntry.objects.get(kind="exclusion").outcome_visible is True


def test_excluded_attempts_stay_counted_everywhere(attempt, pi):
    exclusion_record(attempt=attempt, reason_code="observation_fault", rationale="x", user=pi)
    counts = outcome_counts(attempt.version)
    assert counts["model_outcomes"]["completed"] == 6
    assert counts["excluded"] == 1
    summary = responses_summary(attempt.version)
    assert summary.total.outcomes["completed"] == 6
    assert summary.total.excluded == 1


def test_only_frozen_or_integrity_reasons_are_accepted(attempt, pi):
    with pytest.raises(ValidationError) as error:
        exclusion_record(attempt=attempt, reason_code="looks_odd", rationale="x", user=pi)
    assert "reason_code" in error.value.message_dict
    assert not Exclusion.objects.exists()


def test_a_plan_may_declare_its_own_reasons(protocol, pi):
    draft = build_draft(protocol=protocol, user=pi)
    AnalysisParameterFactory(
        version=draft,
        name="exclusion_reasons",
        kind="json",
        value='[{"code": "fixture_hash_mismatch", "label": "the input fixture\'s hash differs"}]',
    )
    version = freeze(draft, pi)
    responses_import(
        version=version, user=pi, data=csv_bytes(answer_rows(version)), filename="a.csv"
    )
    attempt = Attempt.objects.filter(version=version).first()
    exclusion = exclusion_record(
        attempt=attempt, reason_code="fixture_hash_mismatch", rationale="x", user=pi
    )
    assert exclusion.reason_code == "fixture_hash_mismatch"


def test_an_attempt_is_excluded_once(attempt, pi):
    exclusion_record(attempt=attempt, reason_code="record_corrupt", rationale="x", user=pi)
    with pytest.raises(ValidationError, match="already excluded"):
        exclusion_record(attempt=attempt, reason_code="telemetry_loss", rationale="y", user=pi)


@pytest.mark.parametrize(("person", "status"), [("editor", 403), ("auditor", 403)])
def test_only_the_pi_may_exclude(request, client, attempt, pi, person, status):
    # Who may exclude is the API's and the page's to check (apps.responses.access.PI_ROLES).
    where = f"attempts/{attempt.administration.position}/{attempt.number}"
    version = attempt.version
    url = f"/api/v1/protocols/{version.protocol.code}/versions/{version.label}/{where}/exclude"
    page = f"/protocols/{version.protocol.code}/v/{version.label}/{where}/exclude/"
    body = {"reason_code": "record_corrupt", "rationale": "x"}
    client.force_login(request.getfixturevalue(person))
    assert client.post(url, body).status_code == status
    assert client.post(page, body).status_code == status
    assert not Exclusion.objects.exists()
    client.force_login(pi)
    assert client.post(url, body).status_code == 201
    assert Exclusion.objects.get().decided_by == pi


def test_a_plans_json_reasons_are_accepted_and_any_other_code_is_refused_naming_them(protocol, pi):
    """Issue #12 §3: the plan's own reason codes (a json parameter, frozen with the version)."""
    import json

    draft = build_draft(protocol=protocol, user=pi)
    AnalysisParameterFactory(
        version=draft,
        name="exclusion_reasons",
        kind="json",
        schema={"type": "array"},
        value=json.dumps(
            [
                {"code": "harness_parse_failure", "label": "The harness could not parse it"},
                {"code": "operator_error", "label": "The operator ran the wrong scenario"},
            ]
        ),
    )
    version = freeze(draft, pi)
    responses_import(
        version=version, user=pi, data=csv_bytes(answer_rows(version)), filename="a.csv"
    )
    first, second = Attempt.objects.filter(version=version).order_by("pk")[:2]
    exclusion = exclusion_record(
        attempt=first, reason_code="operator_error", rationale="wrong scenario", user=pi
    )
    assert exclusion.reason_code == "operator_error"
    with pytest.raises(ValidationError) as refused:
        exclusion_record(attempt=second, reason_code="looked_odd", rationale="x", user=pi)
    message = " ".join(refused.value.message_dict["reason_code"])
    assert "'looked_odd' is not a frozen exclusion reason" in message
    assert "harness_parse_failure" in message and "operator_error" in message
    assert "record_corrupt" in message  # the evidence-integrity reasons every plan has
