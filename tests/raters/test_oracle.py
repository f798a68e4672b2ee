"""The oracle: frozen expected outputs on cells, declared comparisons, and the Celery run."""

import json

import pytest
from django.core.exceptions import ValidationError

from apps.core.canonical import canonical_json, sha256_hex
from apps.items.models import Cell
from apps.items.services import KeyUnitSpec, cell_save
from apps.protocols.models import Blob
from apps.raters.models import MachineScore, OracleRun
from apps.raters.oracle import oracle_compare, oracle_value
from apps.raters.services.machine import oracle_run_request
from tests.factories import machine_study

ORACLE = {"kind": "oracle", "name": "fixture-oracle", "version": "1", "comparison": "items"}
# Seed 002: a deterministic four-item transformation (sorting integer tuples).
EXPECTED = [[1, 2, 3], [0, 4, 9], [2, 5, 7], [3, 3, 8]]


def test_items_correct_out_of_n():
    three_right = json.dumps([[1, 2, 3], [0, 4, 9], [7, 5, 2], [3, 3, 8]])
    verdict = oracle_compare(comparison="items", expected=EXPECTED, output=three_right)
    assert (verdict.correct, verdict.n) == (3, 4)
    assert oracle_value(verdict, "count") == 3
    assert oracle_value(verdict, "number") == 0.75
    assert oracle_value(verdict, "binary") is False
    lines = "Alpha one\n  BRAVO   two \n\ncharlie three\n"
    verdict = oracle_compare(
        comparison="items", expected=["alpha one", "bravo two", "charlie 3"], output=lines
    )
    assert (verdict.correct, verdict.n) == (2, 3)


@pytest.mark.parametrize(
    ("comparison", "expected", "output", "equal"),
    [
        ("exact", "Paris", "Paris", True),
        ("exact", "Paris", "paris", False),
        ("normalised", "New  York", " new york\n", True),
        ("normalised", "New York", "New-York", False),
        ("json_equal", {"a": [1, 2]}, '{"a": [1.0, 2]}', True),
        ("json_equal", {"a": [1, 2]}, '{"a": [2, 1]}', False),
        ("json_equal", {"a": 1}, "not json", False),
    ],
)
def test_whole_output_comparisons(comparison, expected, output, equal):
    verdict = oracle_compare(comparison=comparison, expected=expected, output=output)
    assert verdict.all_correct is equal and verdict.n == 1


def _with_fixtures(draft):
    for cell in Cell.objects.filter(version=draft).select_related("item", "level"):
        cell_save(
            item=cell.item,
            level=cell.level,
            prompt=cell.prompt or "Sort each tuple.",
            key=[KeyUnitSpec(u.text, u.executable) for u in cell.key_units.all()],
            expected_kind="json",
            expected_output=EXPECTED,
        )


def test_the_oracle_marks_a_four_item_transformation_with_three_right_as_3_of_4(
    protocol, pi, django_capture_on_commit_callbacks
):
    three_right = json.dumps([[1, 2, 3], [0, 4, 9], [7, 5, 2], [3, 3, 8]])
    version = machine_study(
        protocol=protocol,
        pi=pi,
        fields=[
            {"name": "items_correct", "kind": "count", "scored_by": "scorer", "scorer_role": "o"},
            {
                "name": "share",
                "kind": "number",
                "minimum": "0",
                "maximum": "1",
                "scored_by": "scorer",
                "scorer_role": "o",
            },
            {"name": "complete", "kind": "binary", "scored_by": "scorer", "scorer_role": "o"},
        ],
        scorers={"oracle": ("o", ORACLE)},
        items=["sort-1"],
        evaluands=("alpha", "beta"),
        answers={("sort-1", "alpha", 1): three_right, ("sort-1", "beta", 1): json.dumps(EXPECTED)},
        before_freeze=_with_fixtures,
    )
    # The fixture is part of the frozen document, with its own SHA-256.
    document = json.loads(Blob.objects.get(sha256=version.sha256).content)
    cell = document["design"]["items"][0]["cells"][0]
    assert cell["expected_output"]["sha256"] == sha256_hex(canonical_json(EXPECTED))
    assert document["scorers"][0]["identity"]["comparison"] == "items"

    with django_capture_on_commit_callbacks(execute=True):
        run = oracle_run_request(version=version, scorer_code="oracle", user=pi)
    run.refresh_from_db()  # Celery is eager in tests: the run is done
    assert run.state == "done" and run.progress == 100, run.message
    scores = {
        (s.response.attempt.administration.evaluand.rosters.get().code, s.field): s
        for s in MachineScore.objects.select_related("response__attempt__administration__evaluand")
    }
    assert scores[("alpha", "items_correct")].value == 3
    assert scores[("alpha", "items_correct")].detail == {"correct": 3, "n": 4}
    assert scores[("alpha", "share")].value == 0.75
    assert scores[("alpha", "complete")].value is False
    assert scores[("beta", "items_correct")].value == 4 and scores[("beta", "complete")].value
    # A second run scores nothing twice.
    with django_capture_on_commit_callbacks(execute=True):
        again = oracle_run_request(version=version, scorer_code="oracle", user=pi)
    again.refresh_from_db()
    assert again.counts["scores"] == 0 and again.counts["already_scored"] == 2
    assert MachineScore.objects.count() == 6
    assert OracleRun.objects.count() == 2


def test_an_absent_cell_has_no_expected_output_and_text_must_be_text(protocol, pi):
    from apps.items.services.design import expected_output_clean

    with pytest.raises(ValidationError):
        expected_output_clean(kind="json", value=[1], absent=True)
    with pytest.raises(ValidationError):
        expected_output_clean(kind="text", value=[1], absent=False)
    assert expected_output_clean(kind="", value="", absent=False) == ("", None)


def test_the_cell_page_saves_an_expected_output_and_the_design_page_shows_its_hash(
    client, protocol, pi
):
    from django.urls import reverse

    from tests.factories import build_draft

    draft = build_draft(protocol=protocol, user=pi, items=["sort-1"])
    cell = Cell.objects.get(version=draft)
    kwargs = {"protocol_code": protocol.code, "label": draft.label}
    client.force_login(pi)
    url = reverse("items:cell", kwargs={**kwargs, "item_code": "sort-1", "level_code": "L0"})
    answer = client.post(
        url,
        {
            "prompt": "Sort each tuple.",
            "key": "Sorted.",
            "expected_kind": "json",
            "expected_output": json.dumps(EXPECTED),
        },
    )
    assert answer.status_code == 302, answer.content.decode()[:2000]
    cell.refresh_from_db()
    assert cell.expected_kind == "json" and cell.expected_output == EXPECTED
    page = client.get(reverse("items:design", kwargs=kwargs)).content.decode()
    assert sha256_hex(canonical_json(EXPECTED)) in page
    bad = client.post(url, {"prompt": "x", "expected_kind": "json", "expected_output": "[1,"})
    assert bad.status_code == 200 and "not JSON" in bad.content.decode()
