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
