"""Final values by the rubric's final-value rule, the human audit sample, and the agreement of
machine scorers with the reviewers (checked against the krippendorff package and Cohen's
formula, not against our own output)."""

import json
import re

import krippendorff
import numpy as np
import pytest
from django.urls import reverse

from apps.analysis.inputs import machine_agreement_inputs, observations
from apps.deviations.services import outcome_unseal
from apps.raters.final import agreement_from_inputs, final_values, machine_agreement
from apps.raters.models import AuditSample, ScoringTask
from apps.raters.selectors import scoring_dashboard, task_content
from apps.raters.services import score_submit, scoring_open, task_next
from apps.raters.services.machine import machine_scores_import
from apps.responses.models import Response
from tests.factories import JUDGE, jsonl, machine_study

pytestmark = pytest.mark.django_db

CHOICES = [
    {"value": "comply", "label": "Complies"},
    {"value": "refuse", "label": "Refuses"},
    {"value": "partial", "label": "Partly refuses"},
]
HUMAN = ["comply", "refuse", "partial", "comply", "comply", "refuse"] * 2
JUDGED = ["comply", "refuse", "comply", "comply", "refuse", "refuse"] * 2  # 8 of 12 agree


def _label(**extra) -> dict:
    return {"name": "label", "kind": "categorical", "choices": CHOICES, **extra}


def _position(response_id: int) -> int:
    return Response.objects.get(pk=response_id).attempt.administration.position


def _judge(version, pi, values: dict[int, str], field: str = "label") -> None:
    rows = [{"position": p, "scorer": "judge", field: v} for p, v in sorted(values.items())]
    machine_scores_import(version=version, user=pi, data=jsonl(rows), filename="judge.jsonl")


def _score_all(version, reviewer, label_of) -> int:
    done = 0
    while (assignment := task_next(version_or_none=version, reviewer=reviewer)) is not None:
        position = _position(assignment.response_id)
        score_submit(
            task_token=assignment.task.token,
            reviewer=reviewer,
            values={"label": label_of(position)},
            idempotency_key=assignment.task.token,
        )
        done += 1
    return done


def test_alpha_between_scorer_and_reviewers_equals_the_krippendorff_package(
    client, protocol, pi, reviewer
):
    version = machine_study(
        protocol=protocol,
        pi=pi,
        fields=[_label(scored_by="both", scorer_role="judge")],
        scorers={"judge": ("judge", JUDGE)},
        items=12,
        evaluands=("alpha",),
        parameters={"scores_per_response": 1},
    )
    _judge(version, pi, {p: JUDGED[p - 1] for p in range(1, 13)})
    scoring_open(version=version, user=pi)
    assert _score_all(version, reviewer, lambda p: HUMAN[p - 1]) == 12
    [field] = machine_agreement(version)
    [pair] = field["pairs"]
    assert (pair["first"], pair["second"], pair["n"]) == ("judge", "reviewers", 12)
    codes = {c["value"]: i for i, c in enumerate(CHOICES)}
    matrix = np.array([[codes[v] for v in JUDGED], [codes[v] for v in HUMAN]], dtype=float)
    expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")
    assert pair["alpha"] == pytest.approx(expected, abs=1e-12)
    assert pair["percent_agreement"] == pytest.approx(8 / 12)
    # Cohen (1960): κ = (p_o − p_e) / (1 − p_e), p_e from the two coders' marginals.
    p_o = 8 / 12
    p_e = sum((JUDGED.count(c) / 12) * (HUMAN.count(c) / 12) for c in codes)
    assert pair["kappa"] == pytest.approx((p_o - p_e) / (1 - p_e))
    # Sealed until the PI unseals outcomes; then on the dashboard.
    assert scoring_dashboard(version)["sealed"]
    page = reverse("raters:scoring", kwargs={"code": version.protocol.code, "label": version.label})
    client.force_login(pi)
    sealed_page = client.get(page).content.decode()
    assert "Sealed: agreement values are shown once" in sealed_page
    assert f"{expected:.3f}" not in sealed_page
    outcome_unseal(version=version, user=pi, confirmation=version.protocol.code)
    dashboard = scoring_dashboard(version)
    assert not dashboard["sealed"]
    # Once unsealed, the PI's scoring dashboard shows α, percent agreement and κ (issue #13 §5).
    row = re.search(
        r"<td>judge ↔ reviewers</td><td>12</td>(.*?)</tr>", client.get(page).content.decode()
    )
    assert row is not None
    assert [f"{expected:.3f}", f"{8 / 12:.3f}", f"{pair['kappa']:.3f}"] == re.findall(
        r"<td>([-0-9.]+)</td>", row.group(1)
    )
    # The analysis reads the same pairs from its input document, and a run's result holds what
    # agreement_from_inputs computes from them (apps.analysis.services.analysis_run_perform).
    inputs = machine_agreement_inputs(version)
    assert set(inputs[0]["coders"]) == {"judge", "reviewers"}
    assert all("." in key for key in inputs[0]["coders"]["judge"])
    [from_inputs] = agreement_from_inputs(json.loads(json.dumps(inputs)))
    assert from_inputs["pairs"][0]["alpha"] == pytest.approx(expected, abs=1e-12)


def test_final_values_follow_each_fields_rule(protocol, pi, reviewer):
    version = machine_study(
        protocol=protocol,
        pi=pi,
        fields=[
            _label(scored_by="both", scorer_role="judge"),  # reviewers' where present
            {"name": "judged", "kind": "binary", "scored_by": "scorer", "scorer_role": "judge"},
        ],
        scorers={"judge": ("judge", JUDGE)},
        items=6,
        evaluands=("alpha",),
        parameters={"scores_per_response": 1},
    )
    rows = [
        {"position": p, "scorer": "judge", "label": JUDGED[p - 1], "judged": p % 2 == 0}
        for p in range(1, 7)
    ]
    machine_scores_import(version=version, user=pi, data=jsonl(rows), filename="j.jsonl")
    scoring_open(version=version, user=pi)
    # The reviewer scores three responses only; each task shows the label, never "judged".
    for _ in range(3):
        assignment = task_next(version_or_none=version, reviewer=reviewer)
        assert [f["name"] for f in task_content(assignment.task)["fields"]] == ["label"]
        score_submit(
            task_token=assignment.task.token,
            reviewer=reviewer,
            values={"label": HUMAN[_position(assignment.response_id) - 1]},
            idempotency_key=assignment.task.token,
        )
    rows = {_position(r["response_id"]): r for r in final_values(version)}
    assert len(rows) == 6
    human_scored = [p for p, r in rows.items() if r["status"] == "agreed"]
    assert len(human_scored) == 3
    for position, row in rows.items():
        if position in human_scored:
            assert row["final"]["label"] == HUMAN[position - 1]
            assert row["sources"]["label"] == "reviewers"
        else:
            assert row["status"] == "machine"
            assert row["final"]["label"] == JUDGED[position - 1]
            assert row["sources"]["label"] == "scorer"
        assert row["final"]["judged"] is (position % 2 == 0)
    scored = [e for e in observations(version)["administrations"] if e["status"] == "scored"]
    assert len(scored) == 6 and all(e["machine"]["judge"] for e in scored)


def test_the_reviewers_rule_ignores_the_scorers_value_even_where_reviewers_have_not_scored(
    protocol, pi, reviewer
):
    """Issue #13 §6, the third rule: ``reviewers``. A response the reviewers have not scored has
    no final value (the scorer's is not used), and a scored one takes the reviewers' value where
    the judge said otherwise; the analysis's observations read the same."""
    version = machine_study(
        protocol=protocol,
        pi=pi,
        fields=[_label(scored_by="both", scorer_role="judge", final_value="reviewers")],
        scorers={"judge": ("judge", JUDGE)},
        items=6,
        evaluands=("alpha",),
        parameters={"scores_per_response": 1},
    )
    _judge(version, pi, {p: JUDGED[p - 1] for p in range(1, 7)})
    scoring_open(version=version, user=pi)
    scored = []
    for _ in range(3):
        assignment = task_next(version_or_none=version, reviewer=reviewer)
        position = _position(assignment.response_id)
        score_submit(
            task_token=assignment.task.token,
            reviewer=reviewer,
            values={"label": HUMAN[position - 1]},
            idempotency_key=assignment.task.token,
        )
        scored.append(position)
    rows = {_position(r["response_id"]): r for r in final_values(version)}
    assert sorted(rows) == sorted(scored)
    for position, row in rows.items():
        assert row["final"]["label"] == HUMAN[position - 1]
        assert row["sources"]["label"] == "reviewers"
        assert row["machine"]["judge"]["label"] == JUDGED[position - 1]
    final = {
        e["position"]: e["final"]["label"]
        for e in observations(version)["administrations"]
        if e["status"] == "scored"
    }
    assert final == {p: HUMAN[p - 1] for p in scored}


def test_the_audit_sample_is_drawn_with_the_seed_and_only_it_goes_to_reviewers(
    protocol, pi, reviewer
):
    version = machine_study(
        protocol=protocol,
        pi=pi,
        fields=[
            _label(scored_by="scorer", scorer_role="judge", final_value="reviewers_else_scorer")
        ],
        scorers={"judge": ("judge", JUDGE)},
        items=10,
        evaluands=("alpha",),
        parameters={"scores_per_response": 1, "audit_count": 3},
    )
    _judge(version, pi, {p: JUDGED[p - 1] for p in range(1, 11)})
    created = scoring_open(version=version, user=pi)
    sample = set(AuditSample.objects.filter(version=version).values_list("response_id", flat=True))
    assert created == 3 and len(sample) == 3
    assert (
        set(ScoringTask.objects.filter(version=version).values_list("response_id", flat=True))
        == sample
    )
    # Opening again draws no more.
    assert scoring_open(version=version, user=pi) == 0
    assert AuditSample.objects.filter(version=version).count() == 3
    assignment = task_next(version_or_none=version, reviewer=reviewer)
    # On an audited response the reviewer scores the scorer's field too.
    assert [f["name"] for f in task_content(assignment.task)["fields"]] == ["label"]
    score_submit(
        task_token=assignment.task.token,
        reviewer=reviewer,
        values={"label": "partial"},
        idempotency_key=assignment.task.token,
    )
    rows = {r["response_id"]: r for r in final_values(version)}
    assert len(rows) == 10
    assert rows[assignment.response_id]["final"]["label"] == "partial"
    assert rows[assignment.response_id]["sources"]["label"] == "reviewers"
    [field] = machine_agreement(version)
    assert field["pairs"][0]["n"] == 1


def test_the_audit_sample_is_fixed_by_the_plans_seed(protocol, pi, reviewer, monkeypatch):
    """Issue #13 §4: drawn with the plan's seed. The same responses drawn again with the same
    seed give the same sample; another seed (here put in place of the frozen one) another."""
    from dataclasses import replace

    from django.db import transaction

    from apps.raters.plan import rating_plan
    from apps.raters.services import audit
    from apps.raters.services.audit import audit_sample_draw

    version = machine_study(
        protocol=protocol,
        pi=pi,
        fields=[_label(scored_by="scorer", scorer_role="judge")],
        scorers={"judge": ("judge", JUDGE)},
        items=20,
        evaluands=("alpha",),
        parameters={"scores_per_response": 1, "audit_count": 5},
    )
    frozen = rating_plan(version).seed

    def draw(seed: int) -> set[int]:
        # Each draw is rolled back (the sample is append-only; PostgreSQL refuses a DELETE).
        monkeypatch.setattr(audit, "rating_plan", lambda v: replace(rating_plan(v), seed=seed))
        with transaction.atomic():
            assert audit_sample_draw(version=version) == 5
            drawn = AuditSample.objects.filter(version=version).values_list("response_id")
            sample = {pk for (pk,) in drawn}
            transaction.set_rollback(True)
        assert not AuditSample.objects.filter(version=version).exists()
        return sample

    first = draw(frozen)
    assert draw(frozen) == first
    others = [draw(frozen + n) for n in (1, 2, 3)]
    assert any(other != first for other in others)  # P(all three equal by chance) < 1e-11
    # Opening scoring draws with the frozen seed: the same sample.
    monkeypatch.undo()
    assert scoring_open(version=version, user=pi) == 5
    assert (
        set(AuditSample.objects.filter(version=version).values_list("response_id", flat=True))
        == first
    )
