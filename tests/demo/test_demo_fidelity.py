"""``make demo-fidelity``: seed 003's rubric end to end on the demo's own study. The expected
figures are read off the demo's written faults (``apps.demo.fidelity.FAULTS``), by hand.

The demo is built once for the module (``built_once``, tests/states.py), by the command; the
first test reads what that build printed, then runs the command again."""

import io

import pytest
from django.core.management import call_command

from apps.analysis.models import AnalysisRun
from apps.demo.fidelity import PROTOCOL_CODE, fidelity_table
from apps.protocols.models import Protocol
from tests.states import built_once

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def fidelity_demo(django_db_setup, django_db_blocker):
    """What ``demo_fidelity`` printed when it built the demo."""

    def build() -> str:
        call_command("demo_fidelity", stdout=(out := io.StringIO()))
        return out.getvalue()

    with built_once(django_db_blocker, build) as printed:
        yield printed


@pytest.mark.timeout(900)
def test_the_fidelity_demo_prints_the_fidelity_table_its_faults_imply(fidelity_demo):
    out = fidelity_demo
    run = AnalysisRun.objects.get(version__protocol=Protocol.objects.get(code=PROTOCOL_CODE))
    table = fidelity_table(run)
    # 16 dialogues; five fail fidelity: card-2/sim-b drifts, card-4/sim-a is surface-only (A1),
    # card-5/sim-a's A1 readings disagree, card-5/sim-b has no real seed (A5), card-8/sim-b is
    # incoherent where its card expects not (A2). card-3/sim-b's trivial seed does not count and
    # its G0 card passes anyway.
    assert (table["fidelity"]["count"], table["fidelity"]["n"]) == (11, 16)
    # A1 fails three times: surface-only, disagreeing readings, and card-2/sim-b's collapse,
    # which also leaves its pushback at 5/8 (L3) under an L4 card.
    assert {a: p["count"] for a, p in table["axes"].items()} == {
        "A1": 13,
        "A2": 15,
        "A3": 16,
        "A4": 16,
        "A5": 15,
    }
    assert table["drift"]["count"] == 1
    assert table["judge"]["inconsistent_documents"] == 3
    assert table["collapse"]["most_collapsing_overall"] == "A1"
    assert "fidelity rate" in out and "judge inconsistencies  3 of 16" in out
    # The human judge and the LLM judge agree exactly on A2 and A5 (they differ only on A1
    # pushback turns in two dialogues).
    assert table["judge_agreement"]["a2_pass"]["alpha"] == pytest.approx(1.0)
    # Running it again changes nothing but a rerun.
    call_command("demo_fidelity", stdout=io.StringIO())


@pytest.mark.timeout(900)
def test_the_fidelity_report_page_plot_and_downloads_open(fidelity_demo, client):
    import csv
    import io
    import json

    from django.contrib.auth import get_user_model
    from django.urls import reverse

    run = AnalysisRun.objects.get(version__protocol__code=PROTOCOL_CODE)
    args = (PROTOCOL_CODE, "1.0", run.number)
    client.force_login(get_user_model().objects.get(username="pi"))
    page = client.get(reverse("analysis:report", args=args))
    assert page.status_code == 200
    html = page.content.decode()
    assert "LLM judge consistency" in html and "3 of 16 judge documents" in html
    assert "Which axis collapses" in html
    plot = client.get(reverse("analysis:plot", args=(*args, 0)))
    assert plot.status_code == 200 and plot["Content-Type"].startswith("image/svg")
    tidy = client.get(reverse("analysis:tidy", args=args))
    rows = list(csv.DictReader(io.StringIO(tidy.content.decode())))
    assert len(rows) == 16 and {"fidelity", "A1_pass", "B1_level"} <= set(rows[0])
    result = json.loads(client.get(reverse("analysis:result", args=args)).content)
    assert result["estimates"]["fidelity"]["count"] == 11
