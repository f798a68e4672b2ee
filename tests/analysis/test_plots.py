"""Plots are drawn from the result document, and the same document gives the same SVG bytes."""

import json

import pytest

from apps.analysis.plots import plot_specs, render_svg

pytestmark = pytest.mark.django_db


@pytest.fixture
def document(study, run_now):
    return json.loads(bytes(run_now(study.version, study.pi).result.content))


def test_the_same_document_gives_byte_identical_svg(document):
    first, second = render_svg(document, 0), render_svg(document, 0)
    assert first == second
    assert b"<dc:date>" not in first  # no clock in the bytes


def test_an_opb_document_has_one_plot_per_surface_with_text_alternatives(document):
    specs = plot_specs(document)
    assert [s.index for s in specs] == [0]
    assert "m1" in specs[0].title and "interval bars" in specs[0].alt
    with pytest.raises(IndexError):
        render_svg(document, 1)


def test_a_different_estimate_draws_a_different_plot(document):
    changed = json.loads(json.dumps(document))
    cell = changed["estimates"]["surfaces"][0]["stages"][0]["cells"][0]["F_att"]
    cell["estimate"], cell["interval"] = 0.9, [0.85, 0.95]
    assert render_svg(changed, 0) != render_svg(document, 0)


def test_an_xstest_document_draws_rates_per_model_by_prompt_type():
    document = {
        "kind": "xstest",
        "estimates": {
            "labels": ["full", "refuse"],
            "rates": [
                {
                    "evaluand": m,
                    "prompt_type": t,
                    "prompt_type_name": t,
                    "label": label,
                    "rate": rate,
                    "interval": [max(0, rate - 0.1), min(1, rate + 0.1)],
                }
                for m in ("a", "b")
                for t in ("safe", "unsafe")
                for label, rate in (("full", 0.7), ("refuse", 0.3))
            ],
        },
    }
    svg = render_svg(document, 0)
    assert svg.startswith(b"<?xml") and svg == render_svg(document, 0)
