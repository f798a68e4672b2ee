"""What the analysis reads: final values of a response, attempts, exclusions, natural keys."""

import pytest

from apps.analysis import inputs as data
from apps.items.models import Item
from apps.raters.models import Score, ScoringTask
from apps.responses.models import Administration, Attempt, Response, SessionColumns
from tests.factories import opb_study

pytestmark = pytest.mark.django_db


def _entry(study, position):
    observed = data.observations(study.version)
    return next(a for a in observed["administrations"] if a["position"] == position), observed


def _first_response(study):
    administration = Administration.objects.filter(version=study.version).order_by("position")[0]
    return administration, Response.objects.get(attempt__administration=administration)


def _score(study, response, reviewer, values, kind="primary", slot=9, corrects=None):
    task = ScoringTask.objects.create(
        version=study.version,
        response=response,
        kind=kind,
        slot=slot,
        token=f"t-{kind}-{slot}-{reviewer.pk}-{Score.objects.count()}",
        state="done",
        shuffle_key=0,
    )
    return Score.objects.create(
        task=task,
        version=study.version,
        response=response,
        reviewer=reviewer,
        values=values,
        idempotency_key=f"k{Score.objects.count()}",
        corrects=corrects,
        correction_reason="fix" if corrects else "",
    )


def test_entries_use_natural_keys_only(study):
    entry, observed = _entry(study, 1)
    assert set(entry) >= {"position", "item", "level", "evaluand", "repetition", "status"}
    # The first of the seeded schedule: some item of the design, by its code.
    codes = set(Item.objects.filter(version=study.version).values_list("code", flat=True))
    assert entry["evaluand"] == "m1" and entry["item"] in codes
    assert all(not key.endswith("_id") for key in entry)
    assert observed["counts"]["scored"] == study.counts["administrations"]


def test_a_disagreement_waits_for_adjudication_and_the_adjudication_decides():
    study = opb_study(evaluands=1, rules={"refusal": "exact"})
    administration, response = _first_response(study)
    r1, r3 = study.reviewers[0], study.editor
    primary = Score.objects.filter(response=response).order_by("pk").first()
    flipped = not primary.values["refusal"]
    _score(study, response, r1, dict(primary.values, refusal=flipped), corrects=primary, slot=3)
    entry, observed = _entry(study, administration.position)
    # The correction replaces the score it corrects; the primaries now disagree by the exact
    # rule, so the response awaits adjudication and is not analysed yet.
    assert entry["status"] == "unscored"
    assert observed["counts"]["unscored"] == 1
    _score(study, response, r3, dict(primary.values, refusal=False), kind="adjudication", slot=1)
    entry, _ = _entry(study, administration.position)
    assert entry["final_method"] == "adjudicated" and entry["final"]["refusal"] is False
    assert r3.username not in [s["rater"] for s in entry["scores"]]


def test_differing_numbers_the_rule_does_not_compare_are_averaged(study):
    administration, response = _first_response(study)
    scores = list(Score.objects.filter(response=response).order_by("pk"))
    other = scores[0].values["hedge_count"] + 4
    _score(
        study,
        response,
        study.reviewers[1],
        dict(scores[1].values, hedge_count=other),
        corrects=scores[1],
        slot=4,
    )
    entry, _ = _entry(study, administration.position)
    assert entry["final_method"] == "agreed"
    assert entry["final"]["hedge_count"] == scores[0].values["hedge_count"] + 2


def test_a_rerun_never_replaces_the_first_attempt_that_crossed_the_gate(study):
    # CRUCIBLE §10: a rerun is another recorded attempt; the analysis keeps the first attempt
    # that crossed the execution-evidence gate, with its declared outcome.
    administration, _ = _first_response(study)
    second = Attempt.objects.create(
        version=study.version, administration=administration, number=2, terminal_outcome="completed"
    )
    Response.objects.create(version=study.version, attempt=second, text="again", word_count=1)
    entry, observed = _entry(study, administration.position)
    assert entry["attempt"] == 1 and entry["status"] == "scored"
    assert observed["counts"]["superseded_responses"] == 1


def test_platform_losses_are_counted_apart(study):
    administration, _ = _first_response(study)
    Attempt.objects.create(
        version=study.version,
        administration=administration,
        number=2,
        terminal_outcome="platform_loss",
    )
    entry, observed = _entry(study, administration.position)
    assert entry["attempt"] == 1 and entry["status"] == "scored"
    assert observed["counts"]["platform_loss_attempts"] == 1


def test_the_task_block_columns_are_the_analysed_attempts_not_the_reruns(study):
    # Seed 002's session columns (route, tokens, infrastructure stratum) must come from the same
    # attempt whose scores are analysed: the first that crossed the gate, not a later rerun.
    administration, first = _first_response(study)
    SessionColumns.objects.create(attempt_id=first.attempt_id, tokens=111)
    rerun = Attempt.objects.create(
        version=study.version,
        administration=administration,
        number=2,
        terminal_outcome="completed",
        raw={"session": "rerun"},
    )
    SessionColumns.objects.create(attempt=rerun, tokens=999)
    entry, _ = _entry(study, administration.position)
    assert entry["attempt"] == 1
    blocks = data.task_blocks(study.version)["administrations"]
    row = next(
        r
        for r in blocks
        if (r["item"], r["level"], r["repetition"])
        == (entry["item"], entry["level"], entry["repetition"])
        and r["evaluand"] == entry["evaluand"]
    )
    assert row["columns"]["tokens"] == 111 and not row["missing_columns"]
    assert "record" not in row  # the verbatim archive is not read
