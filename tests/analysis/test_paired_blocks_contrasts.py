"""Issue #32 §4–§5 on seed 002's layout: every simple effect as a named estimate, reported
grouped with the plan's primary contrasts first; incomplete blocks counted per condition and
why, and where the drops differ between conditions a mixed model keeping them beside the
complete-block estimate, a disagreement flagged and never resolved."""

import itertools

import numpy as np
import pytest

from apps.analysis.pipelines import get_pipeline
from apps.analysis.stats.task_blocks import (
    factor_contrasts,
    mixed_model_contrasts,
    paired_contrasts,
    simple_effects,
)
from apps.studies.paired_blocks.pipeline import (
    CONTRAST_GROUPS,
    DECLARATION,
    _incomplete_blocks,
    report_sections,
)
from tests.factories import route_raw

PIPELINE = get_pipeline("paired_blocks")
FACTORS = {
    "alternate": ("absent", "present"),
    "framing": ("quality", "safety"),
    "friction": ("low", "high"),
}
NAMES = sorted(FACTORS)
COMBOS = [dict(zip(NAMES, c, strict=True)) for c in itertools.product(*(FACTORS[n] for n in NAMES))]
SIMPLE = [f"{f}_at_{g}_{level}" for f in NAMES for g in NAMES if g != f for level in FACTORS[g]]


def _run(raw):
    inputs = PIPELINE.assemble(raw)
    return PIPELINE.compute(inputs, parameters=raw["parameters"], seed=2002)


@pytest.fixture(scope="module")
def budget_failures():
    """Budget failures only under high friction, in model-1's sub-study A (seed 002's
    informative missingness): 12 administrations in 12 different blocks, marked on a study
    drawn once as ``route_raw`` marks a failure (the record's stratum, no response)."""
    raw = route_raw(seed=5, planted={"friction": 0.3})
    seen = set()
    for adm, entry in zip(
        raw["task_blocks"]["administrations"],
        raw["observations"]["administrations"],
        strict=True,
    ):
        block = (adm["item"], (adm["repetition"] - 1) // 8)
        if (
            adm["evaluand"] == "model-1"
            and adm["item"].startswith("TA")
            and adm["assignment"]["friction"] == "high"
            and block not in seen
            and len(seen) < 12
        ):
            seen.add(block)
            adm["record"]["metadata"]["infrastructure_failure"] = "budget"
            adm["terminal_outcome"] = "budget_exhausted"
            for key in ("attempt", "terminal_outcome", "word_count", "final", "final_method"):
                entry.pop(key, None)
            entry.update(status="no_response", scores=[])
    return _run(raw)


def test_every_simple_effect_is_reported_for_every_model_sub_study_and_endpoint(budget_failures):
    result = budget_failures
    reported = {
        (r["evaluand"], r["sub_study"], r["endpoint"], r["contrast"]): r
        for r in result["contrasts"]
    }
    assert len(SIMPLE) == 12
    for model in ("model-1", "model-2"):
        for sub in ("A", "B"):
            for name in SIMPLE:
                row = reported[(model, sub, "full_completion", name)]
                assert row["group"] == "simple" and row["bootstrap_interval"] is not None


# Noiseless: every block has the same paired difference, which scipy's t test warns about.
@pytest.mark.filterwarnings("ignore:Precision loss occurred")
def test_a_simple_effect_is_the_factors_contrast_within_one_level_of_another():
    # Checked against the 2^k definition on a noiseless table: friction's effect is 0.1 where
    # the alternate is absent and 0.4 where it is present, whatever the framing.
    high = {n: np.array([c[n] == FACTORS[n][1] for c in COMBOS], dtype=float) for n in NAMES}
    truth = 0.5 + 0.1 * high["friction"] + 0.3 * high["friction"] * high["alternate"]
    y = np.tile(truth, (12, 1)) + np.linspace(-0.1, 0.1, 12)[:, None]  # block effects cancel
    contrasts = simple_effects(COMBOS, FACTORS)
    result = {
        c.name: c.estimate
        for c in paired_contrasts(y, contrasts, replicates=50, confidence=0.95, seed=1).contrasts
    }
    assert result["friction_at_alternate_absent"] == pytest.approx(0.1)
    assert result["friction_at_alternate_present"] == pytest.approx(0.4)
    assert result["friction_at_framing_quality"] == pytest.approx(0.25)
    assert result["alternate_at_friction_low"] == pytest.approx(0.0)
    assert result["alternate_at_friction_high"] == pytest.approx(0.3)


def test_simple_effects_are_named_estimates_a_decision_rule_can_name():
    declared = {e.name for e in DECLARATION.estimates}
    assert {f"A_{n}" for n in SIMPLE} | {f"B_{n}" for n in SIMPLE} <= declared
    table = [
        {
            "id": "H1-alt",
            "finding": "friction raises completion where the alternate is present",
            "condition": {
                "all": [{"estimate": "A_friction_at_alternate_present", "op": ">", "value": 0}]
            },
        }
    ]
    result = _run(route_raw(seed=11, planted={"friction": 0.3}, decision_table=table))
    for model in result["decision"]["per_model"]:
        assert model["matched"] == ["H1-alt"]
    values = PIPELINE.estimates_of(result)
    assert {v.surface for v in values["A_friction_at_alternate_present"]} == {"model-1", "model-2"}
    # The rule's estimate is the plan's primary contrast: reported first.
    (section,) = [s for s in report_sections(result) if s["code"] == "A"]
    groups = [r["group"] for r in section["models"][0]["contrasts"]]
    assert groups[0] == "primary"
    assert groups == sorted(groups, key=CONTRAST_GROUPS.index)
    assert section["models"][0]["contrasts"][0]["contrast"] == "friction_at_alternate_present"


def test_blocks_dropped_are_counted_per_condition_with_their_stratum(budget_failures):
    (entry,) = [
        b
        for b in budget_failures["incomplete_blocks"]
        if (b["evaluand"], b["sub_study"], b["endpoint"]) == ("model-1", "A", "full_completion")
    ]
    assert entry["dropped"] == 12 and entry["complete"] == entry["blocks"] - 12
    for condition in entry["by_condition"]:
        if condition["condition"]["friction"] == "high":
            assert set(condition["reasons"]) <= {"infrastructure: budget"}
        else:
            assert condition["missing"] == 0
    assert sum(c["missing"] for c in entry["by_condition"]) == 12
    assert entry["drops_differ"] is True
    friction = next(
        r
        for r in budget_failures["contrasts"]
        if (r["evaluand"], r["sub_study"], r["endpoint"], r["contrast"])
        == ("model-1", "A", "full_completion", "friction")
    )
    assert friction["n_blocks"] == entry["complete"] and friction["n_incomplete"] == 12
    # The sensitivity analysis keeps the incomplete blocks and stands beside the estimate.
    sensitivity = friction["sensitivity"]
    assert sensitivity["n_blocks"] == entry["blocks"]
    low, high = sensitivity["interval"]
    assert low < 0.3 < high  # the planted friction effect
    assert isinstance(sensitivity["disagrees"], bool)


def test_no_drops_no_sensitivity_analysis(budget_failures):
    untouched = [b for b in budget_failures["incomplete_blocks"] if b["evaluand"] == "model-2"]
    assert untouched and all(b["dropped"] == 0 and not b["drops_differ"] for b in untouched)
    assert not any(
        "sensitivity" in r for r in budget_failures["contrasts"] if r["evaluand"] == "model-2"
    )


def test_on_complete_balanced_data_the_mixed_model_is_the_paired_mean():
    # REML with every value observed and one mean per condition: the condition means are the
    # column means, so a contrast is the mean paired difference (Laird & Ware 1982, balanced).
    rng = np.random.default_rng(3)
    y = rng.normal(size=(30, 8)) + rng.normal(size=(30, 1))
    contrasts = factor_contrasts(COMBOS, FACTORS) + simple_effects(COMBOS, FACTORS)
    for fit, contrast in zip(
        mixed_model_contrasts(y, contrasts, confidence=0.95), contrasts, strict=True
    ):
        assert fit.estimate == pytest.approx(float(y.mean(axis=0) @ np.array(contrast.weights)))
        assert fit.interval[0] < fit.estimate < fit.interval[1]


def test_a_disagreement_between_complete_blocks_and_the_mixed_model_is_flagged_not_resolved():
    # Friction lifts half the blocks by 1 and the other half not at all; a low-friction value is
    # missing exactly in the lifted blocks, so the complete blocks see no effect at all.
    rng = np.random.default_rng(4)
    blocks = 40
    lifted = np.arange(blocks) < blocks // 2
    high = np.array([c["friction"] == "high" for c in COMBOS], dtype=float)
    y = rng.normal(size=(blocks, 1)) + np.outer(lifted, high) + rng.normal(0, 0.05, (blocks, 8))
    low_column = int(np.flatnonzero(high == 0)[0])
    y[lifted, low_column] = np.nan
    reasons = {(i, low_column): "infrastructure: budget" for i in np.flatnonzero(lifted)}
    contrasts = factor_contrasts(COMBOS, FACTORS)
    results = paired_contrasts(y, contrasts, replicates=200, confidence=0.95, seed=1).contrasts
    out = _incomplete_blocks(y, reasons, COMBOS, contrasts, results, 0.95)
    assert out["drops_differ"] and out["dropped"] == blocks // 2
    friction = next(c for c in out["sensitivity"]["contrasts"] if c["name"] == "friction")
    complete = next(r for r in results if r.name == "friction")
    assert abs(complete.estimate) < 0.05  # only unlifted blocks are complete
    assert friction["estimate"] > 0.3  # the lifted blocks' other values still count
    assert friction["disagrees"] is True
    assert "friction" in out["disagreements"]
    # Both stand: the complete-block estimate is not replaced.
    assert complete.bootstrap_interval is not None


def test_the_report_groups_the_contrasts_and_shows_the_incomplete_blocks(budget_failures):
    from django.template.loader import render_to_string

    html = render_to_string(
        "studies/paired_blocks/report.html",
        {
            "estimates": budget_failures,
            "sub_study_sections": report_sections(budget_failures),
            "plots": [],
        },
    )
    for heading in ("Main effects", "Interactions", "Simple effects"):
        assert heading in html
    assert html.index("Main effects") < html.index("Simple effects")
    assert "Incomplete task blocks" in html and "infrastructure: budget" in html
    assert "friction_at_alternate_present" in html
