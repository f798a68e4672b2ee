"""The design diagnosis of a ``comparison`` draft through the comparison pipeline's own
compute (issue #35, "Checked by"): a planted large difference of refusal rates is found in
nearly every simulation, a null difference at about the interval's nominal 5 %, and, for an
unclustered two-proportion comparison, power matches ``statsmodels.stats.power`` within 2 MC
SE; the curve varies the items per condition; the world's ranges are enforced."""

import math

import pytest
from statsmodels.stats.power import NormalIndPower
from statsmodels.stats.proportion import proportion_effectsize

from apps.analysis.diagnosis.engine import diagnose_version, world_schema_of
from apps.analysis.diagnosis.world import WorldError
from tests.factories import comparison_draft

pytestmark = pytest.mark.django_db

PLAIN, WARNED = "rate:verdict=refused:plain", "rate:verdict=refused:warned"
PERFECT = {"scorer_accuracy": 1.0, "missingness": 0.0}
DIFFERENCE = "difference verdict=refused: warned vs plain · alpha"
RATIO = "ratio verdict=refused: warned vs plain · alpha"


def _draft(code, **parameters):
    # 20 items per condition, each asked 3 times: the item-clustered intervals have 20
    # clusters per condition, above the calibrated floor of 10.
    return comparison_draft(
        code=code,
        items_per_condition=20,
        evaluands=("alpha",),
        repetitions=3,
        parameters=parameters or None,
    )


def _nominal_se(p: float, n: int) -> float:
    """The binomial MC SE of a share p over n simulations: the floor of the check's tolerance
    when the bootstrap SE of an observed share of 0 or 1 is 0."""
    return math.sqrt(p * (1 - p) / n)


def test_a_large_difference_is_found_and_a_null_one_at_its_nominal_rate():
    draft = _draft("CMP-DG")
    large = diagnose_version(
        version=draft,
        world={**PERFECT, PLAIN: 0.1, WARNED: 0.7, "item_icc": 0.1},
        sims=30,
        seed=1,
    )["points"][0]["estimates"]
    assert large[DIFFERENCE]["power"]["value"] >= 0.95
    assert large[DIFFERENCE]["type_s_rate"]["value"] == 0.0
    assert large[RATIO]["power"]["value"] >= 0.95

    sims = 240
    null = diagnose_version(
        version=draft,
        world={**PERFECT, PLAIN: 0.3, WARNED: 0.3, "item_icc": 0.1},
        sims=sims,
        seed=2,
    )["points"][0]["estimates"]
    found = null[DIFFERENCE]
    # The 95 % CR2 interval excludes a true 0 in about 5 % of simulations: within 2 MC SE
    # (the bootstrap SE, at least the binomial SE at 5 % over 240 simulations, 0.014).
    se = max(found["power"]["se"], _nominal_se(0.05, sims))
    assert abs(found["power"]["value"] - 0.05) <= 2 * se, found["power"]
    se = max(found["coverage"]["se"], _nominal_se(0.05, sims))
    assert abs(found["coverage"]["value"] - 0.95) <= 2 * se, found["coverage"]
    # The difference of rates is unbiased: 0 within 2 MC SE.
    assert abs(found["bias"]["value"]) <= 2 * found["bias"]["se"], found["bias"]


def test_two_proportion_power_matches_statsmodels():
    """Unclustered (cluster none: Newcombe's hybrid score interval), every response its own
    item, no ICC: a two-proportion comparison of 0.30 against 0.50 with 60 responses per
    condition. Its power is NormalIndPower's (Cohen's h) within 2 MC SE."""
    draft = comparison_draft(
        code="CMP-PWR",
        items_per_condition=10,
        evaluands=("alpha",),
        parameters={"cluster": "none"},
    )
    sims = 300
    document = diagnose_version(
        version=draft,
        world={**PERFECT, PLAIN: 0.3, WARNED: 0.5, "item_icc": 0.0},
        sims=sims,
        seed=3,
        size="items_per_condition",
        values=[60],
    )
    point = document["points"][0]
    assert point["administrations"] == 120
    found = point["estimates"][DIFFERENCE]["power"]
    analytic = NormalIndPower().power(
        effect_size=proportion_effectsize(0.5, 0.3), nobs1=60, alpha=0.05, ratio=1.0
    )
    assert 0.5 < analytic < 0.7  # 0.60: a power where a mismatch would show
    assert abs(found["value"] - analytic) <= 2 * found["se"], (found, analytic)


def test_the_curve_narrows_the_interval_with_items_per_condition():
    draft = _draft("CMP-CURVE")
    world = {**PERFECT, PLAIN: 0.2, WARNED: 0.35, "item_icc": 0.1}
    first = diagnose_version(
        version=draft, world=world, sims=12, seed=5, size="items_per_condition", values=[10, 40]
    )
    again = diagnose_version(
        version=draft, world=world, sims=12, seed=5, size="items_per_condition", values=[10, 40]
    )
    assert first == again  # reproducible from its seed
    small, large = first["points"]
    assert large["administrations"] == 4 * small["administrations"]
    widths = [p["estimates"][DIFFERENCE]["mean_width"]["value"] for p in first["points"]]
    assert widths[1] < widths[0]
    assert first["size"]["draft"] == 20


def test_the_world_is_validated_with_the_property_named():
    draft = _draft("CMP-SCHEMA")
    schema = world_schema_of(draft)
    assert schema["properties"][WARNED]["description"]
    assert schema["properties"]["item_icc"]["maximum"] == 0.9
    with pytest.raises(WorldError) as error:
        diagnose_version(version=draft, world={WARNED: 1.5}, sims=2, seed=1)
    assert error.value.where == WARNED
    with pytest.raises(WorldError) as error:
        diagnose_version(version=draft, world={"rate:verdict=maybe:plain": 0.2}, sims=2, seed=1)
    assert error.value.where == "rate:verdict=maybe:plain"
