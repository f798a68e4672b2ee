"""Seed 003's rubric through the blind queue: the reviewer enters judged signals; the verdict is
derived against the cell's card, never typed, and a contradiction is never stored."""

import pytest
from django.core.exceptions import ValidationError

from apps.raters.selectors import task_content
from apps.raters.services import score_submit, scoring_open, task_next
from tests.factories import CARD, faithful_signals, frozen_study, put_cards

pytestmark = pytest.mark.django_db


@pytest.fixture
def study():
    from tests.factories import ProtocolVersionFactory

    version = ProtocolVersionFactory()
    built = frozen_study(
        responses=2,
        template="fidelity",
        version=version,
        parameters={"drift_epsilon": "0.05"},
        before_freeze=put_cards,
    )
    scoring_open(version=built.version, user=built.pi)
    return built


def submit(study, values, reviewer=0, key="k1"):
    reviewer = study.reviewers[reviewer]
    assignment = task_next(version_or_none=None, reviewer=reviewer)
    return assignment, score_submit(
        task_token=assignment.task.token,
        reviewer=reviewer,
        values=values,
        idempotency_key=key,
    )


def test_the_verdict_is_derived_from_the_signals_and_the_card(study):
    _, score = submit(study, {"signals": faithful_signals()})
    v = score.values
    assert v["fidelity"] is True and v["loss1"] == 1 and v["drift_flag"] is False
    assert [v[f"a{n}_pass"] for n in range(1, 6)] == [True] * 5


def test_a_surface_only_window_fails_a1_and_fidelity(study):
    signals = faithful_signals()
    for turn in signals["turns"]:
        turn.update(pushback=False, pushback_quote="")  # "why?" turns: judged not pushback
    _, score = submit(study, {"signals": signals})
    assert score.values["a1_pass"] is False and score.values["fidelity"] is False
    assert score.values["loss1"] == 0.8


@pytest.mark.parametrize("field", ["fidelity", "loss1", "a1_pass"])
def test_a_typed_verdict_is_refused(study, field):
    with pytest.raises(ValidationError) as error:
        submit(study, {"signals": faithful_signals(), field: True})
    assert "derived at submission" in str(error.value.message_dict[field])


def test_bad_signals_are_refused_naming_the_turn_and_nothing_is_stored(study):
    signals = faithful_signals()
    signals["turns"][2]["pushback_quote"] = ""
    signals["quotes"]["A3"] = " "
    signals["turns"].append(signals["turns"][0])  # five turns in a four-turn window
    with pytest.raises(ValidationError) as error:
        submit(study, {"signals": signals})
    messages = " ".join(error.value.message_dict["signals"])
    assert "signals.turns[2].pushback_quote" in messages
    assert "signals.quotes.A3" in messages
    assert "signals.turns:" in messages and "4 user turns" in messages
    from apps.raters.models import Score

    assert Score.objects.count() == 0


def test_the_task_shows_the_pressure_window_but_never_the_cards_levels(study):
    reviewer = study.reviewers[0]
    assignment = task_next(version_or_none=None, reviewer=reviewer)
    content = task_content(assignment.task)
    assert content["pressure_window"]["turns"] == 4
    assert content["pressure_window"]["f7"] == CARD["F7"]
    text = repr(content)
    assert "axis_levels" not in text and "G0" not in text and "C0" not in text


def test_the_task_api_gives_the_pressure_window(study, client):
    reviewer = study.reviewers[0]
    client.force_login(reviewer)
    response = client.post("/api/v1/tasks/next")
    assert response.status_code in (200, 201)
    task = response.json()["task"]
    assert task["pressure_window"]["turns"] == 4
    assert "axis_levels" not in response.content.decode()


def test_a_judge_never_sees_the_verdicts_its_signals_produce(study, client):
    # The verdicts are derived from the card; shown to the judge, a pass or a fail would reveal
    # the card's axis levels. They are stored (the analysis reads them) but never shown back.
    verdicts = ["fidelity", "loss1", "drift_flag", *(f"a{n}_pass" for n in range(1, 6))]
    assignment, score = submit(study, {"signals": faithful_signals()})
    assert all(name in score.values for name in verdicts)
    client.force_login(study.reviewers[0])
    token = assignment.task.token
    api = client.get(f"/api/v1/tasks/{token}").json()
    assert "signals" in api["your_score"]
    page = client.get(f"/tasks/{token}/").content.decode()
    shown = page.split('<dl class="values">', 1)[1].split("</dl>", 1)[0]
    labels = dict(study.version.rubric.fields.values_list("name", "label"))
    assert f"<dt>{labels['signals']}</dt>" in shown  # the judge's own signals are shown back
    for name in verdicts:
        assert name not in api["your_score"]
        # The page names fields by their labels (computed ones marked): neither may appear.
        assert f"<dt>{name}" not in shown and f"<dt>{labels[name]}" not in shown
    again = client.post(
        f"/api/v1/tasks/{token}/score",
        {"values": {"signals": faithful_signals()}, "idempotency_key": "k1"},
        content_type="application/json",
    ).json()
    assert "signals" in again["values"] and not set(verdicts) & set(again["values"])


def test_an_unreadable_card_is_reported_to_the_judge_without_its_values(study, monkeypatch):
    from dataclasses import replace

    from apps.raters import judged
    from apps.studies.fidelity import verdicts

    def unreadable(card):
        level = card["axis_levels"]["A1"]
        raise verdicts.FidelityInputError({"card.axis_levels.A1": f"got {level!r}"})

    rules = replace(judged.judged_signals(), card=unreadable)
    monkeypatch.setattr(judged, "_registered", [rules])
    with pytest.raises(ValidationError) as refused:
        submit(study, {"signals": faithful_signals()})
    message = str(refused.value)
    assert "card.axis_levels.A1" in message and "tell the PI" in message
    assert CARD["axis_levels"]["A1"] not in message
