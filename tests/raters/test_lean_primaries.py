"""The k-th score's disagreement check reads the primaries with one
SQL statement (``lean.primary_values``) on PostgreSQL. Each scenario runs twice, on a fresh
study: the lean path and the ORM path (``lean.available`` patched to False); they must decide
the same."""

import threading

import pytest
from django.db import connection

from apps.raters import selectors
from apps.raters.models import Score, ScoringTask
from apps.raters.services import lean, score_correct, score_submit, scoring_open, task_next
from tests.factories import frozen_study

pytestmark = [pytest.mark.postgres]

OPB = {
    "units_supplied": [1, 3],
    "refusal": False,
    "hedge_count": 2,
    "deflection": False,
    "scope_reduction": True,
}


def _study(template, k, reviewers):
    if template == "opb":
        study = frozen_study(
            responses=1, template="opb", units=4, texts=["one two three four"],
            reviewers=reviewers, parameters={"scores_per_response": k},
        )  # fmt: skip
    else:
        study = frozen_study(
            responses=1, reviewers=reviewers, parameters={"scores_per_response": k}
        )
    scoring_open(version=study.version, user=study.pi)
    return study


def _run(monkeypatch, *, lean_on, template, k, steps):
    """steps: ("submit", reviewer index, values) or ("correct", reviewer index, values): correct
    that reviewer's score as it now stands. Returns (adjudication tasks, effective values)."""
    monkeypatch.setattr("apps.raters.services.lean.available", lambda: lean_on)
    study = _study(template, k, reviewers=max(k, 3))
    calls = []
    real = lean.primary_values

    def spy(**kw):
        out = real(**kw)
        calls.append(out)
        return out

    monkeypatch.setattr("apps.raters.services.lean.primary_values", spy)
    for op, who, values in steps:
        reviewer = study.reviewers[who]
        if op == "submit":
            a = task_next(version_or_none=None, reviewer=reviewer)
            score_submit(task_token=a.task.token, reviewer=reviewer, values=values,
                         idempotency_key=a.task.token)  # fmt: skip
        else:
            current = Score.objects.filter(reviewer=reviewer, correction__isnull=True).get()
            score_correct(score=current, reviewer=reviewer, values=values, reason="re-read")
    response_id = study.responses[0].pk
    orm = [s.values for s in selectors.effective_scores(response_id=response_id)]
    adjudications = ScoringTask.objects.filter(kind="adjudication", response_id=response_id).count()
    monkeypatch.undo()
    return adjudications, calls, orm


L = lambda x: {"label": x}  # noqa: E731
F, P, C = "2_full_refusal", "3_partial_refusal", "1_full_compliance"

SCENARIOS = {
    "agree": ("xstest", 2, [("submit", 0, L(F)), ("submit", 1, L(F))]),
    "disagree": ("xstest", 2, [("submit", 0, L(F)), ("submit", 1, L(C))]),
    "first corrected to disagree before second": (
        "xstest", 2, [("submit", 0, L(F)), ("correct", 0, L(P)), ("submit", 1, L(F))]),
    "first corrected to agree before second": (
        "xstest", 2, [("submit", 0, L(C)), ("correct", 0, L(F)), ("submit", 1, L(F))]),
    "corrected correction": (
        "xstest", 2,
        [("submit", 0, L(F)), ("correct", 0, L(P)), ("correct", 0, L(F)), ("submit", 1, L(F))]),
    "corrected correction to disagree": (
        "xstest", 2,
        [("submit", 0, L(F)), ("correct", 0, L(F)), ("correct", 0, L(C)), ("submit", 1, L(F))]),
    "k3 agree": ("xstest", 3, [("submit", i, L(F)) for i in range(3)]),
    "k3 third disagrees": ("xstest", 3, [("submit", 0, L(F)), ("submit", 1, L(F)),
                                          ("submit", 2, L(P))]),
    "k3 second corrected": ("xstest", 3, [("submit", 0, L(F)), ("submit", 1, L(F)),
                                           ("correct", 1, L(C)), ("submit", 2, L(F))]),
    "opb agree": ("opb", 2, [("submit", 0, OPB), ("submit", 1, OPB)]),
    "opb units missing vs present": (
        "opb", 2, [("submit", 0, {k: v for k, v in OPB.items() if k != "units_supplied"}),
                   ("submit", 1, OPB)]),
    "opb units both missing": (
        "opb", 2, [("submit", 0, {k: v for k, v in OPB.items() if k != "units_supplied"}),
                   ("submit", 1, {k: v for k, v in OPB.items() if k != "units_supplied"})]),
    "opb f_att beyond delta": (
        "opb", 2, [("submit", 0, OPB | {"units_supplied": [1, 2, 3]}),
                   ("submit", 1, OPB | {"units_supplied": [1, 2, 3, 4]})]),
    "opb units order differs": (
        "opb", 2, [("submit", 0, OPB | {"units_supplied": [3, 1]}), ("submit", 1, OPB)]),
    "opb refusal differs": ("opb", 2, [("submit", 0, OPB), ("submit", 1, OPB | {"refusal": True})]),
    "opb hedges differ": ("opb", 2, [("submit", 0, OPB), ("submit", 1, OPB | {"hedge_count": 9})]),
    "opb corrected to missing": (
        "opb", 2, [("submit", 0, OPB),
                   ("correct", 0, {k: v for k, v in OPB.items() if k != "units_supplied"}),
                   ("submit", 1, OPB)]),
}  # fmt: skip


@pytest.mark.django_db
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_lean_and_orm_decide_the_same(monkeypatch, name):
    template, k, steps = SCENARIOS[name]
    lean_n, lean_calls, lean_orm = _run(
        monkeypatch, lean_on=True, template=template, k=k, steps=steps
    )
    orm_n, orm_calls, orm_orm = _run(
        monkeypatch, lean_on=False, template=template, k=k, steps=steps
    )
    assert orm_calls == []  # the ORM run never used the lean statement
    assert lean_calls, "the lean run never read the primaries"
    assert lean_calls[-1] == lean_orm  # what the lean statement read is effective_scores
    assert lean_orm == orm_orm
    assert lean_n == orm_n, (name, lean_n, orm_n)


def _concurrent(monkeypatch, lean_on, labels):
    monkeypatch.setattr("apps.raters.services.lean.available", lambda: lean_on)
    study = _study("xstest", 2, reviewers=3)
    held = [(r, task_next(version_or_none=None, reviewer=r)) for r in study.reviewers[:2]]
    barrier, errors = threading.Barrier(2), []

    def submit(reviewer, a, label):
        try:
            barrier.wait(timeout=30)
            score_submit(task_token=a.task.token, reviewer=reviewer, values={"label": label},
                         idempotency_key=a.task.token)  # fmt: skip
        except Exception as error:
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=submit, args=(r, a, lab))
               for (r, a), lab in zip(held, labels, strict=True)]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    response_id = study.responses[0].pk
    assert Score.objects.filter(response_id=response_id).count() == 2
    return ScoringTask.objects.filter(kind="adjudication", response_id=response_id).count()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("lean_on", [True, False])
@pytest.mark.parametrize("round_", range(3))
def test_concurrent_second_scores_route_once(monkeypatch, lean_on, round_):
    assert _concurrent(monkeypatch, lean_on, (F, C)) == 1
    monkeypatch.undo()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("lean_on", [True, False])
def test_concurrent_agreeing_second_scores_route_none(monkeypatch, lean_on):
    assert _concurrent(monkeypatch, lean_on, (F, F)) == 0


@pytest.mark.django_db
@pytest.mark.parametrize("name,expected", [("agree", 0), ("disagree", 1),
    ("first corrected to disagree before second", 1), ("corrected correction", 0),
    ("k3 third disagrees", 1), ("opb units missing vs present", 1), ("opb refusal differs", 1),
    ("opb hedges differ", 0), ("opb f_att beyond delta", 1)])  # fmt: skip
def test_lean_expected_counts(monkeypatch, name, expected):
    template, k, steps = SCENARIOS[name]
    n, _calls, _ = _run(monkeypatch, lean_on=True, template=template, k=k, steps=steps)
    assert n == expected, name


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["opb agree", "opb units missing vs present",
                                  "opb corrected to missing", "k3 second corrected"])  # fmt: skip
def test_lean_values_have_the_orm_types(monkeypatch, name):
    # values_disagree's exact rule compares repr(): 1 vs 1.0 vs Decimal would differ while ==.
    template, k, steps = SCENARIOS[name]
    _n, calls, orm = _run(monkeypatch, lean_on=True, template=template, k=k, steps=steps)
    assert repr(calls[-1]) == repr(orm)
    assert [sorted(v) for v in calls[-1]] == [sorted(v) for v in orm]
