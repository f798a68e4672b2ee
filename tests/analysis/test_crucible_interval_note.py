"""Issue #19: the crucible report says its preregistered percentile interval under-covers.

The figures are the calibration table's (docs/analysis.md, written by make calibrate).
"""

from django.template.loader import render_to_string


def _render(method: str) -> str:
    estimates = {
        "interval": {
            "method": method,
            "replicates": 10000,
            "confidence": 0.95,
            "aggregation_rule": "mean",
            "min_families": 3,
        }
    }
    return render_to_string("studies/crucible/report.html", {"estimates": estimates, "plots": []})


def test_the_crucible_report_says_its_percentile_interval_covers_less_than_its_level():
    html = _render("family-clustered percentile bootstrap")
    assert 'id="interval-calibration"' in html
    assert "74 % of the time with 3 families" in html
    assert "91 % with 10" in html


def test_no_such_warning_for_another_method():
    assert 'id="interval-calibration"' not in _render("cluster bootstrap-t")


def test_a_plan_that_chose_the_bootstrap_t_is_told_its_interval_is_calibrated():
    estimates = {
        "interval": {
            "method": "family-clustered bootstrap-t (studentised by the cluster-robust standard "
            "error)",
            "bootstrap_interval": "bootstrap_t",
            "replicates": 10000,
            "confidence": 0.95,
            "aggregation_rule": "mean",
            "min_families": 3,
            "required_families": 10,
        }
    }
    html = render_to_string("studies/crucible/report.html", {"estimates": estimates, "plots": []})
    assert 'id="interval-calibration"' not in html
    assert 'id="interval-calibrated"' in html
    assert "93.8–96.0 % of the time from 10 to 80 families" in html
    assert "below 10 contributing families" in html
    assert "the plan's min_families is 3" in html


def test_a_percentile_plan_is_told_its_intervals_are_withheld_below_80_families():
    estimates = {
        "interval": {
            "method": "family-clustered percentile bootstrap",
            "bootstrap_interval": "percentile",
            "replicates": 10000,
            "confidence": 0.95,
            "aggregation_rule": "mean",
            "min_families": 3,
            "required_families": 80,
            "percentile_undercoverage_acknowledged": True,
        },
        "axes": [
            {
                "evaluand": "E1",
                "rung": "R0",
                "axis": "recon",
                "estimate": 0.61,
                "interval": None,
                "note": "interval unavailable: 15 families contributed, fewer than the 80 …",
                "percentile_coverage": "the calibration suite measured … 91.2 % …",
                "calibrated_interval": {
                    "method": "family-clustered bootstrap-t",
                    "interval": [0.5, 0.7],
                },
                "n": 45,
                "N": 45,
                "n_families": 15,
                "families": [],
            }
        ],
    }
    html = render_to_string("studies/crucible/report.html", {"estimates": estimates, "plots": []})
    assert "below 80 contributing families" in html
    assert "where the percentile interval reaches its calibrated coverage" in html
    assert "It is reported only from 80 contributing families" in html
    assert "percentile_undercoverage_acknowledged, which no longer changes this" in html
    row = html[html.index("<td>recon</td>") :]
    row = row[: row.index("</tr>")]
    assert "interval unavailable" in row
    assert "the plan's percentile interval is not reported" in row
    assert "the calibrated family-clustered bootstrap-t: [0.500, 0.700]" in row


def test_any_rung_verdicts_say_they_are_exploratory_and_hard_fails_show_bound_and_ungraded():
    from apps.studies.crucible.pipeline import ANY_RUNG_NOTE

    estimates = {
        "interval": {"method": "family-clustered bootstrap-t", "confidence": 0.95},
        "acceptance": [
            {
                "policy": "p",
                "evaluand": "E1",
                "verdict": "R1",
                "rungs": [],
                "exploratory": True,
                "note": ANY_RUNG_NOTE,
            }
        ],
        "hard_fails": [
            {
                "evaluand": "E1",
                "rung": "R0",
                "channel": "breach",
                "count": 0,
                "rate": 0.0,
                "rate_upper_bound": 0.0296,
                "episodes": 100,
                "not_graded": 4,
            }
        ],
    }
    html = render_to_string("studies/crucible/report.html", {"estimates": estimates, "plots": []})
    assert "Exploratory — the any_rung rule picks among the rungs without multiplicity" in html
    row = html[html.index("<td>breach</td>") :]
    row = row[: row.index("</tr>")]
    assert "<td>3.0 %</td><td>100</td><td>4</td>" in row
    assert "Exact upper 95 % bound" in html
