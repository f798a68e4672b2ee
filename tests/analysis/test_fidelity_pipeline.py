"""The ``fidelity`` pipeline on hand-made verdicts whose rates are known, and its plan template
through protocol_create and the computability gate."""

import pytest

from apps.protocols.plans import PLAN_TEMPLATES
from apps.studies.fidelity.pipeline import AXES, compute


def _row(position, card, *, fails=(), drift=False, levels=None):
    passes = {axis: int(axis not in fails) for axis in AXES}
    return {
        "position": position,
        "card": card,
        "evaluand": "sim",
        "fidelity": int(not fails and not drift),
        "drift_flag": int(drift),
        "loss1": sum(passes.values()) / 5,
        **passes,
        "levels": levels or {"A1": "L3", "A2": "L1", "A3": "L2", "A4": "C0", "A5": "G0", "B1": ""},
    }


def _inputs(rows, flags=()):
    return {
        "rows": rows,
        "planned": [
            {"card": c, "N": sum(r["card"] == c for r in rows)} for c in {r["card"] for r in rows}
        ],
        "judge_flags": list(flags),
        "exclusions": [],
        "counts": {},
    }


def test_rates_distribution_collapse_and_judge_counts_are_the_hand_counted_ones():
    rows = []
    for card in range(8):  # 8 cards × 2 dialogues = 16
        for _ in range(2):
            rows.append(_row(len(rows) + 1, f"card-{card}"))
    rows[0] = _row(1, "card-0", fails=("A1",))
    rows[3] = _row(4, "card-1", fails=("A1", "A5"))
    rows[5] = _row(6, "card-2", drift=True)
    l0 = {"A1": "L4", "A2": "L0", "A3": "L2", "A4": "C0", "A5": "G0", "B1": ""}
    rows[9] = _row(10, "card-4", fails=("A2",), levels=l0)
    flags = [
        {"position": 1, "scorer": "j", "inconsistencies": [{"where": "A1.pass", "axis": "A1"}]},
        {"position": 2, "scorer": "j", "inconsistencies": []},
        {"position": 3, "scorer": "j", "inconsistencies": [{"where": "loss1", "axis": ""}]},
    ]
    result = compute(_inputs(rows, flags), parameters={"cluster_by": "card"}, seed=1)
    assert (result["fidelity"]["count"], result["fidelity"]["n"]) == (12, 16)
    assert result["fidelity"]["rate"] == pytest.approx(0.75)
    assert result["fidelity"]["clusters"] == 8
    low, high = result["fidelity"]["interval"]
    assert low < 0.75 < high
    assert {a: p["count"] for a, p in result["axes"].items()} == {
        "A1": 14, "A2": 15, "A3": 16, "A4": 16, "A5": 15,
    }  # fmt: skip
    assert result["drift"]["count"] == 1
    dist = {d["loss1"]: d["count"] for d in result["loss1"]["distribution"]}
    # Drift lowers fidelity, never loss1 (the drifting dialogue passes every axis).
    assert dist == {0.0: 0, 0.2: 0, 0.4: 0, 0.6: 1, 0.8: 2, 1.0: 13}
    assert result["collapse"]["most_collapsing_overall"] == "A1"
    assert result["collapse"]["most_collapsing_by_level"]["L0"]["axis"] == "A2"
    assert result["judge"]["inconsistent_documents"] == 2
    assert result["judge"]["by_axis"] == {"A1": 1, "loss1": 1}


def test_clustering_by_dialogue_counts_every_dialogue_as_a_cluster():
    rows = [_row(n, f"card-{n % 4}", fails=("A3",) if n % 5 == 0 else ()) for n in range(1, 21)]
    by_card = compute(_inputs(rows), parameters={"cluster_by": "card"}, seed=1)
    by_dialogue = compute(_inputs(rows), parameters={"cluster_by": "dialogue"}, seed=1)
    assert by_dialogue["fidelity"]["clusters"] == 20
    assert by_card["fidelity"]["clusters"] == 4
    # Four cards are below the six-cluster floor: the rate stands, the interval is withheld.
    assert by_card["fidelity"]["interval"] is None and "note" in by_card["fidelity"]
    assert by_dialogue["fidelity"]["interval"] is not None


@pytest.mark.django_db
def test_protocol_create_accepts_the_fidelity_template():
    from apps.protocols.services import protocol_create
    from tests.factories import UserFactory

    assert PLAN_TEMPLATES["fidelity"].pipeline == "fidelity"
    protocol = protocol_create(
        user=UserFactory(), code="FID-1", title="Fidelity", template="fidelity"
    )
    names = set(protocol.versions.get().parameters.values_list("name", flat=True))
    assert {"drift_epsilon", "cluster_by", "scores_per_response", "seed"} <= names


def test_judge_agreement_is_reported_on_the_re_derived_and_on_the_judges_own_verdicts():
    """Issue #32 §7: a judge whose own verdicts contradict its observations must not read as
    agreeing with the reviewers; α is checked against the ``krippendorff`` package."""
    import krippendorff
    import numpy as np

    reviewers = [1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    said = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0]  # the judge's own a1_pass, as written
    keys = [f"{i + 1}.1" for i in range(len(reviewers))]

    def entry(judge):
        return {
            "field": "a1_pass",
            "kind": "binary",
            "level": "nominal",
            "categories": 2,
            "coders": {
                "judge": dict(zip(keys, judge, strict=True)),
                "reviewers": dict(zip(keys, reviewers, strict=True)),
            },
        }

    inputs = {
        **_inputs([_row(1, "X@1")]),
        "machine_agreement": [entry(reviewers)],  # re-derived: the judge's observations agree
        "judge_as_imported": [entry(said)],
    }
    result = compute(inputs, parameters={}, seed=1)
    (field,) = result["judge_agreement"]
    (pair,) = field["pairs"]
    assert (field["field"], pair["first"], pair["second"]) == ("a1_pass", "judge", "reviewers")
    assert pair["re_derived"]["alpha"] == pytest.approx(1.0)
    expected = krippendorff.alpha(
        reliability_data=np.array([said, reviewers]), level_of_measurement="nominal"
    )
    assert pair["as_imported"]["alpha"] == pytest.approx(expected)
    assert expected < 0.5
    from django.template.loader import render_to_string

    html = render_to_string("studies/fidelity/report.html", {"estimates": result, "plots": []})
    assert "α as the judge said" in html and "α re-derived" in html
    # No judge document imported: no such section, the run's machine_agreement alone.
    assert "judge_agreement" not in compute(_inputs([_row(1, "X@1")]), parameters={}, seed=1)


def test_rates_per_evaluand_and_a_most_collapsing_axis_only_where_the_data_separate_it():
    # Issue #36 §5. Two evaluands: "good" fails A3 in 2 dialogues of 20, "poor" in 12 of 20; the
    # pooled rate (14/40 failing A3) describes neither, the per-evaluand rates do.
    rows = []
    for n in range(1, 41):
        row = _row(n, f"card-{n % 8}", fails=("A3",) if n % 10 < (1 if n <= 20 else 6) else ())
        row["evaluand"] = "good" if n <= 20 else "poor"
        rows.append(row)
    result = compute(_inputs(rows), parameters={"cluster_by": "dialogue"}, seed=1)
    by = result["by_evaluand"]
    assert by["good"]["axes"]["A3"]["rate"] == pytest.approx(18 / 20)
    assert by["poor"]["axes"]["A3"]["rate"] == pytest.approx(8 / 20)
    assert by["poor"]["fidelity"]["interval"] is not None
    collapse = result["collapse"]
    assert collapse["most_collapsing_overall"] == "A3"
    # 14 of 40 fail A3, none any other axis: A3's interval lies above every other's.
    assert collapse["failure_rates"]["A3"]["count"] == 14
    assert collapse["most_collapsing_separable"] is True
    # Five dialogues also fail A1 (5/40 against 14/40): A3 still leads, but not separably.
    for row in rows[:10]:
        row["A1"] = 0 if row["position"] % 2 else row["A1"]
    mixed = compute(_inputs(rows), parameters={"cluster_by": "dialogue"}, seed=1)["collapse"]
    assert mixed["most_collapsing_separable"] is False
    assert mixed["most_collapsing_note"].startswith("not separable")


def test_rates_are_pooled_over_evaluands_only_where_the_plan_asks():
    # Issue #36 §5: two evaluands, 20 dialogues each, fidelity 18/20 and 8/20; the pooled 26/40
    # describes neither. By default (and under the seed's template) nothing is pooled.
    from django.template.loader import render_to_string

    rows = []
    for n in range(1, 41):
        row = _row(n, f"card-{n % 8}", fails=("A3",) if n % 10 < (1 if n <= 20 else 6) else ())
        row["evaluand"] = "good" if n <= 20 else "poor"
        rows.append(row)
    apart = compute(_inputs(rows), parameters={"cluster_by": "dialogue"}, seed=1)
    assert apart["pooled_rates"] is False and apart["evaluands"] == 2
    assert apart["fidelity"] is None and apart["axes"] == {} and apart["drift"] is None
    assert apart["by_evaluand"]["good"]["fidelity"]["rate"] == pytest.approx(18 / 20)
    html = render_to_string("studies/fidelity/report.html", {"estimates": apart, "plots": []})
    assert 'id="rates-per-evaluand"' in html and 'id="fidelity-by-evaluand"' in html
    assert "Axes and drift" not in html
    pooled = compute(
        _inputs(rows), parameters={"cluster_by": "dialogue", "pooled_rates": "true"}, seed=1
    )
    assert pooled["fidelity"]["rate"] == pytest.approx(26 / 40)
    assert pooled["by_evaluand"] == apart["by_evaluand"]
    html = render_to_string("studies/fidelity/report.html", {"estimates": pooled, "plots": []})
    assert "pooled over the 2 evaluands as the plan asks" in html
    specs = {s.name: s.default for s in PLAN_TEMPLATES["fidelity"].parameter_specs()}
    assert specs["pooled_rates"] == "false"
