"""Seed 003: when the judging page refuses a signals submission, the form comes back with what
the reviewer entered (every turn's ticks and quotes, the dialogue's flags, the axis quotes), so
only the fault needs fixing; nothing is stored until it is."""

from html.parser import HTMLParser

import pytest

from apps.raters.models import Score
from apps.raters.services import scoring_open, task_next
from tests.factories import ProtocolVersionFactory, frozen_study, put_cards

pytestmark = pytest.mark.django_db


class _Form(HTMLParser):
    """The form controls of a page: ``values`` (text inputs and textareas) and ``checked``
    (the names of ticked checkboxes)."""

    def __init__(self, html: str):
        super().__init__()
        self.values: dict[str, str] = {}
        self.checked: set[str] = set()
        self._textarea: str | None = None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "input" and a.get("type") == "checkbox" and "checked" in a:
            self.checked.add(a["name"])
        elif tag == "input" and a.get("type") == "text":
            self.values[a["name"]] = a.get("value") or ""
        elif tag == "textarea":
            self._textarea = a["name"]
            self.values[a["name"]] = ""

    def handle_data(self, data):
        if self._textarea:
            self.values[self._textarea] += data

    def handle_endtag(self, tag):
        if tag == "textarea":
            self._textarea = None


@pytest.fixture
def task(client):
    study = frozen_study(
        responses=1,
        template="fidelity",
        reviewers=1,
        version=ProtocolVersionFactory(),
        parameters={"drift_epsilon": "0.05"},
        before_freeze=put_cards,
    )
    scoring_open(version=study.version, user=study.pi)
    reviewer = study.reviewers[0]
    assignment = task_next(version_or_none=None, reviewer=reviewer)
    client.force_login(reviewer)
    return f"/tasks/{assignment.task.token}/"


def _entered() -> dict:
    """A four-turn window as typed: turn 2's pushback ticked with a quote containing markup,
    turn 3 with a seed, the dialogue's A2 flag, four axis quotes — and A3's quote left empty."""
    post = {
        "signals.turns": "4",
        "signals.t1.accept_without_question": "true",
        "signals.t2.pushback": "true",
        "signals.t2.pushback_quote": 'That is thin; give me the "threshold" <you> use.',
        "signals.t2.operationalization_demand": "true",
        "signals.t3.seed": "true",
        "signals.t3.seed_quote": "What about soil moisture lags?",
        "signals.t3.seed_substantive": "true",
        "signals.t3.seed_topic_relevant": "true",
        "signals.t4.premise_defended": "true",
        "signals.incoherent_demand_flag": "true",
        "signals.quote.A1": "turn 2: give me the threshold",
        "signals.quote.A2": "demands contradict: fast & exhaustive",
        "signals.quote.A3": "",
        "signals.quote.A4": "turn 4 still holds it",
        "signals.quote.A5": "turn 3: soil moisture",
        "idempotency_key": "k-refused",
    }
    return post


def test_a_refused_submission_comes_back_with_the_signals_entered(client, task):
    response = client.post(task, _entered())
    assert response.status_code == 200
    html = response.content.decode()
    assert "signals.quotes.A3" in html  # the refusal names the fault
    assert Score.objects.count() == 0
    form = _Form(html)
    assert form.checked == {
        "signals.t1.accept_without_question",
        "signals.t2.pushback",
        "signals.t2.operationalization_demand",
        "signals.t3.seed",
        "signals.t3.seed_substantive",
        "signals.t3.seed_topic_relevant",
        "signals.t4.premise_defended",
        "signals.incoherent_demand_flag",
    }
    entered = _entered()
    assert form.values["signals.t2.pushback_quote"] == entered["signals.t2.pushback_quote"]
    assert form.values["signals.t3.seed_quote"] == entered["signals.t3.seed_quote"]
    assert form.values["signals.t1.pushback_quote"] == ""
    assert form.values["signals.t1.seed_quote"] == ""
    for axis in ("A1", "A2", "A3", "A4", "A5"):
        assert form.values[f"signals.quote.{axis}"] == entered[f"signals.quote.{axis}"]

    # Fixing only the fault and sending the form back as re-rendered is accepted.
    fixed = {name: value for name, value in form.values.items()}
    fixed.update({name: "true" for name in form.checked})
    fixed.update({"signals.turns": "4", "signals.quote.A3": "turn 2: give me the threshold"})
    fixed["idempotency_key"] = "k-fixed"
    response = client.post(task, fixed)
    assert response.status_code == 302
    score = Score.objects.get()
    signals = score.values["signals"]
    assert signals["turns"][1]["pushback"] is True
    assert signals["turns"][2]["novel_seed"]["quote"] == entered["signals.t3.seed_quote"]
    assert signals["incoherent_demand_flag"] is True


def test_a_fresh_task_page_has_nothing_ticked(client, task):
    form = _Form(client.get(task).content.decode())
    assert not {name for name in form.checked if name.startswith("signals.")}
    assert all(value == "" for name, value in form.values.items() if name.startswith("signals."))
