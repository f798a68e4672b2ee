"""Issue #37 §6: analysis on thin data. *Run analysis* below the plan's minimum (the gate's
declared needs, on the real data) asks first and says what is missing; a report always leads
with the finding(s), "Contradictory" or "Not evaluable: why"; unsealing lands on the report."""

import re

import pytest
from django.urls import reverse

from apps.analysis.computability import data_shortfall
from apps.analysis.models import RunState
from tests.factories import opb_study

pytestmark = pytest.mark.django_db


def _first_h2(html: str) -> str:
    match = re.search(r"<h2[^>]*>(.*?)</h2>", html, re.S)
    assert match, "the page has no h2"
    return re.sub(r"\s+", " ", match.group(1)).strip()


def test_no_scored_response_is_below_the_minimum_and_the_report_says_not_evaluable(
    client, run_now, unseal
):
    # The last of two reviewers has scored nothing: no response has a final score.
    study = opb_study(code="THIN-0", evaluands=1, items_per_family=2, last_reviewer_skips=1)
    shortfall = data_shortfall(version=study.version)
    assert shortfall.scored == 0 and shortfall.administrations > 0
    assert shortfall.missing == ["no administration has a final score yet"]

    run = run_now(study.version, study.pi)
    assert run.state == RunState.SUCCEEDED, run.error
    unseal(study.version, study.pi)
    client.force_login(study.pi)
    html = client.get(
        reverse("analysis:report", args=["THIN-0", study.version.label, run.number])
    ).content.decode()
    assert _first_h2(html) == "Not evaluable: no response has a final score yet"


def test_too_few_items_for_the_plans_slopes_is_below_the_minimum(client, run_now, unseal):
    study = opb_study(code="THIN-1", evaluands=1, items_per_family=2, repetitions=1)
    missing = " | ".join(data_shortfall(version=study.version).missing)
    # The decision table the gate's needs feed would not be evaluable: the plan requires 10.
    assert "beta_A not evaluable: 2 items, the plan requires 10" in missing
    assert "beta_B not evaluable: 2 items, the plan requires 10" in missing

    run = run_now(study.version, study.pi)
    unseal(study.version, study.pi)
    client.force_login(study.pi)
    html = client.get(
        reverse("analysis:report", args=["THIN-1", study.version.label, run.number])
    ).content.decode()
    first = _first_h2(html)
    assert first.startswith("Not evaluable: beta_A not evaluable: 2 items"), first
    # Before "What ran" and its hashes, not after them.
    assert html.index("headline-heading") < html.index("What ran")


def test_enough_items_meet_the_minimum_and_the_run_is_queued_without_asking(
    client, django_capture_on_commit_callbacks
):
    study = opb_study(code="FULL", evaluands=1, items_per_family=10, repetitions=2)
    assert data_shortfall(version=study.version).missing == []
    client.force_login(study.pi)
    url = reverse("analysis:runs", args=["FULL", study.version.label])
    with django_capture_on_commit_callbacks(execute=False):
        response = client.post(url, {"kind": "opb", "reason": ""})
    assert response.status_code == 302


def test_unsealing_lands_on_the_latest_report(client, run_now):
    study = opb_study(code="LAND", evaluands=1, items_per_family=2, repetitions=1)
    run_now(study.version, study.pi)
    second = run_now(study.version, study.pi)
    client.force_login(study.pi)
    response = client.post(
        reverse("deviations:unseal", args=["LAND", study.version.label]),
        {"confirmation": "LAND"},
        follow=True,
    )
    assert response.redirect_chain[-1][0] == reverse(
        "analysis:report", args=["LAND", study.version.label, second.number]
    )
