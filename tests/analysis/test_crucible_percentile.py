"""Issue #36 §3: CRUCIBLE's percentile interval is chosen only explicitly, and never silently.

The pipeline's default is the calibrated bootstrap-t. Below the 80 families from which the
calibration suite shows the percentile interval covers 93.5 % (docs/analysis.md: 74.0 % at 3
families, 85.8 % at 6, 91.2 % at 10, 92.5 % at 20, 93.2 % at 40, 93.6 % at 80, nominal 95 %),
the freeze gate refuses it unless the plan freezes ``percentile_undercoverage_acknowledged``;
every such interval then carries that measured coverage and the bootstrap-t beside it. The
crucible template chooses the percentile with the acknowledgement (CRUCIBLE §9.1).
"""

import json

import pytest
from django.core.cache import cache

from apps.analysis.stats.bootstrap import (
    PERCENTILE_CALIBRATED_CLUSTERS,
    percentile_coverage_measured,
)
from apps.demo.crucible import crucible_draft
from apps.protocols.gate import version_gate
from apps.protocols.plans import PLAN_TEMPLATES
from apps.studies.crucible.pipeline import compute
from tests.factories import UserFactory, crucible_inputs


def _run(inputs, **parameters):
    parameters.setdefault("bootstrap_replicates", "500")
    parameters.setdefault("acceptance_policies", [])
    text = {k: v if isinstance(v, str) else json.dumps(v) for k, v in parameters.items()}
    return compute(inputs, parameters=text, seed=7)


def test_the_crucible_template_chooses_the_percentile_with_its_acknowledgement():
    specs = {s.name: s.default for s in PLAN_TEMPLATES["crucible"].parameter_specs()}
    assert specs["bootstrap_interval"] == "percentile"
    assert specs["percentile_undercoverage_acknowledged"] == "true"


def test_the_measured_coverage_is_the_suites_figure_or_the_two_around_it():
    assert "85.8 % at 6 clusters" in percentile_coverage_measured(6)
    assert "between 91.2 % (10 clusters) and 92.5 % (20 clusters) for 12" in (
        percentile_coverage_measured(12)
    )
    assert "less than the 74.0 % it covered at 3 clusters" in percentile_coverage_measured(2)
    assert percentile_coverage_measured(PERCENTILE_CALIBRATED_CLUSTERS) == ""


@pytest.mark.django_db
class TestTheGate:
    @pytest.fixture(autouse=True)
    def _fresh_verdicts(self):
        cache.clear()
        yield
        cache.clear()

    def _problems(self, code="CRU-P", **parameters):
        draft, _ = crucible_draft(user=UserFactory(), code=code, parameters=parameters)
        return [p for p in version_gate(version=draft) if p.code == "percentile_unacknowledged"]

    def test_refuses_the_percentile_without_the_acknowledgement_naming_the_figures(self):
        (problem,) = self._problems(
            bootstrap_interval="percentile", percentile_undercoverage_acknowledged="false"
        )
        assert "fewer than the 80" in problem.message
        assert "bootstrap_t" in problem.message
        assert problem.url.endswith("#param-percentile_undercoverage_acknowledged")

    def test_passes_the_acknowledged_percentile_and_the_bootstrap_t(self):
        assert self._problems() == []  # the template's percentile + acknowledgement
        assert (
            self._problems(
                "CRU-T",
                bootstrap_interval="bootstrap_t",
                percentile_undercoverage_acknowledged="false",
            )
            == []
        )


def test_an_acknowledged_percentile_interval_carries_its_coverage_and_the_bootstrap_t():
    inputs = crucible_inputs(evaluands=1, families=12, rungs=1, axes=1)
    percentile = _run(
        inputs, bootstrap_interval="percentile", percentile_undercoverage_acknowledged="true"
    )
    calibrated = _run(inputs, bootstrap_interval="bootstrap_t")
    (cell,), (other,) = percentile["axes"], calibrated["axes"]
    assert percentile["interval"]["percentile_undercoverage_acknowledged"] is True
    assert "between 91.2 % (10 clusters) and 92.5 % (20 clusters)" in cell["percentile_coverage"]
    assert "bootstrap-t" in cell["calibrated_interval"]["method"]
    # The sensitivity is the bootstrap-t the plan would have had: same data, same seed.
    assert cell["calibrated_interval"]["interval"] == other["interval"]
    assert cell["interval"] != other["interval"]
    assert "percentile_coverage" not in other and "calibrated_interval" not in other


def test_below_ten_families_the_sensitivity_says_why_the_bootstrap_t_is_unavailable():
    inputs = crucible_inputs(evaluands=1, families=6, rungs=1, axes=1)
    (cell,) = _run(inputs, bootstrap_interval="percentile")["axes"]
    assert cell["interval"] is not None
    assert "85.8 % at 6 clusters" in cell["percentile_coverage"]
    assert cell["calibrated_interval"]["interval"] is None
    assert "fewer than the 10 the bootstrap-t needs" in cell["calibrated_interval"]["note"]


def test_confirmatory_comparisons_carry_them_too():
    truth = {"E1": 0.8, "E2": 0.5}
    inputs = crucible_inputs(
        evaluands=2, families=12, rungs=1, axes=1, truth=lambda e, r, a: truth[e]
    )
    comparisons = [{"axis": "axis1", "rung": "R0", "evaluands": ["E1", "E2"]}]
    result = _run(inputs, bootstrap_interval="percentile", confirmatory_comparisons=comparisons)
    (comparison,) = result["comparisons"]["confirmatory"]
    assert "92.5 %" in comparison["percentile_coverage"]
    low, high = comparison["calibrated_interval"]["interval"]
    assert low < comparison["estimate"] < high
