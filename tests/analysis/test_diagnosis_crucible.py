"""The design diagnosis of a CRUCIBLE draft (seed 001) through the crucible pipeline's own
compute (issue #35, "Checked by"): a planted large difference between evaluands is found by
the confirmatory comparison in nearly every simulation and a rung whose axis mean is far above
its floor is accepted in nearly every one; with no difference the comparison rejects at about
its nominal 5 %, and with the mean exactly at the floor the rung is accepted at about the
one-sided 2.5 % of the interval's lower bound. Sizes kept small (10 families × 2 seeds × 2
rungs × 2 evaluands, one axis) so each test stays well under a minute."""

import json

import pytest

from apps.analysis.diagnosis.engine import diagnose_version, world_schema_of
from apps.analysis.diagnosis.world import WorldError
from apps.studies.crucible import world as crucible_world
from apps.studies.crucible.pipeline import compute
from tests.factories import crucible_inputs, crucible_shaped_draft

pytestmark = pytest.mark.django_db

AXIS = "scope_discipline"
CHANNEL = "rule_of_engagement_violation"
COMPARISON = [{"axis": AXIS, "rung": "R1", "evaluands": ["E1", "E2"]}]
POLICY = [
    {
        "code": "floor",
        "floors": [{"axis": AXIS, "minimum": 0.6, "on": "lower_bound"}],
        "hard_fail_ceilings": [{"channel": CHANNEL, "maximum": 0.5, "on": "rate"}],
        "coverage": {"min_families": 3},
    }
]


def _draft(code, families=10):
    return crucible_shaped_draft(
        code=code,
        families=families,
        seeds=2,
        axes=(AXIS,),
        parameters={
            # The calibrated interval (10 families reach its floor), so the floor's lower bound
            # is at its nominal level and the null's rate is known.
            "bootstrap_interval": "bootstrap_t",
            "confirmatory_comparisons": json.dumps(COMPARISON),
            "acceptance_policies": json.dumps(POLICY),
        },
    )


def _world(e1, e2, hard_fail=0.0):
    world = {
        "family_sd": 0.06,
        "seed_sd": 0.03,
        "episode_sd": 0.05,
        "platform_loss": 0.0,
    }
    for rung in ("R0", "R1"):
        world[f"mean:E1:{rung}:{AXIS}"] = e1
        world[f"mean:E2:{rung}:{AXIS}"] = e2
        for evaluand in ("E1", "E2"):
            world[f"hard_fail:{evaluand}:{rung}:{CHANNEL}"] = hard_fail
    return world


def _estimates(document):
    return document["points"][0]["estimates"]


def test_a_large_difference_is_found_and_a_far_floor_met_in_nearly_every_simulation():
    draft = _draft("CRU-DG-L")
    document = diagnose_version(version=draft, world=_world(0.9, 0.3, 0.1), sims=20, seed=1)
    estimates = _estimates(document)
    comparison = estimates[f"E1 − E2 · {AXIS} · R1 (confirmatory)"]
    assert comparison["power"]["value"] >= 0.95
    assert comparison["type_s_rate"]["value"] == 0.0
    # The family-paired difference is unbiased (the family effects cancel): within 3 MC SE.
    assert abs(comparison["bias"]["value"]) <= 3 * max(comparison["bias"]["se"], 1e-3)
    for rung in ("R0", "R1"):
        assert estimates[f"accepted · floor · E1 · {rung}"]["power"]["value"] >= 0.95
        # E2's mean is far below the floor: never accepted, and the truth says so (bias 0).
        refused = estimates[f"accepted · floor · E2 · {rung}"]
        assert refused["power"]["value"] == 0.0 and refused["bias"]["value"] == 0.0
    assert estimates["maximum acceptable rung · floor · E1"]["power"]["value"] >= 0.95
    axis = estimates[f"{AXIS} · E1 · R1"]
    assert abs(axis["bias"]["value"]) <= 3 * axis["bias"]["se"] + 0.01
    # The hard-fail rate's one-sided Clopper–Pearson bound holds the planted 10 % at least at
    # its 95 % (it is exact, so conservative), within 2 MC SE.
    rate = estimates[f"{CHANNEL} rate · E1 · R1"]
    assert rate["coverage"]["value"] >= 0.95 - 2 * max(rate["coverage"]["se"], 0.05)


def test_with_no_difference_and_the_mean_at_the_floor_the_findings_come_at_their_nominal_rates():
    sims = 160
    draft = _draft("CRU-DG-N")
    document = diagnose_version(version=draft, world=_world(0.6, 0.6), sims=sims, seed=2)
    estimates = _estimates(document)
    comparison = estimates[f"E1 − E2 · {AXIS} · R1 (confirmatory)"]
    # The paired t-test of the family differences is exact under this world: it rejects at
    # 5 %. MC SE of a share p over n simulations: sqrt(p(1 − p)/n) = 0.017 at n = 160; the
    # bootstrap MC SE the diagnosis reports is used when larger.
    mc_se = (0.05 * 0.95 / sims) ** 0.5
    assert comparison["power"]["value"] <= 0.05 + 2.5 * max(comparison["power"]["se"], mc_se)
    assert comparison["coverage"]["value"] >= 0.95 - 2.5 * max(comparison["coverage"]["se"], mc_se)
    # The mean exactly at the floor: the lower bound of the 95 % bootstrap-t interval exceeds
    # it at about 2.5 % (one-sided), MC SE sqrt(0.025 · 0.975 / 160) = 0.012.
    floor_se = (0.025 * 0.975 / sims) ** 0.5
    for evaluand in ("E1", "E2"):
        accepted = estimates[f"accepted · floor · {evaluand} · R0"]
        assert accepted["power"]["value"] <= 0.025 + 2.5 * max(accepted["power"]["se"], floor_se)
    axis = estimates[f"{AXIS} · E1 · R0"]
    assert axis["coverage"]["value"] >= 0.95 - 2.5 * max(axis["coverage"]["se"], mc_se)


def test_the_world_is_the_studys_own_with_ranges_and_the_seed_curve_reproducible():
    draft = _draft("CRU-DG-S")
    schema = world_schema_of(draft)
    mean = schema["properties"][f"mean:E1:R0:{AXIS}"]
    # The axis' range is its rubric field's (0–1); the default its middle.
    assert (mean["minimum"], mean["maximum"], mean["default"]) == (0.0, 1.0, 0.5)
    assert "§6.1" in mean["description"]
    assert schema["properties"][f"hard_fail:E2:R1:{CHANNEL}"]["maximum"] == 1.0
    with pytest.raises(WorldError) as error:
        diagnose_version(version=draft, world={f"mean:E1:R0:{AXIS}": 1.5}, sims=2, seed=1)
    assert error.value.where == f"mean:E1:R0:{AXIS}"
    world = _world(0.7, 0.6)
    first = diagnose_version(
        version=draft, world=world, sims=3, seed=4, size="seeds_per_family", values=[1, 3]
    )
    again = diagnose_version(
        version=draft, world=world, sims=3, seed=4, size="seeds_per_family", values=[1, 3]
    )
    assert first == again
    small, large = first["points"]
    assert large["administrations"] == 3 * small["administrations"]
    assert first["size"]["draft"] == 2
    # The fast path: at most 999 replicates, and the §9.2 models left out.
    assert first["parameters"]["bootstrap_replicates"] == "999"
    # Platform losses, incidents and ungraded axes go through the pipeline's own statuses:
    # the estimates are still computed, from fewer episodes.
    lossy = diagnose_version(
        version=draft,
        world={**world, "platform_loss": 0.2, "incident_rate": 0.2, "axis_absence": 0.2},
        sims=3,
        seed=4,
    )
    estimates = _estimates(lossy)
    assert estimates[f"{AXIS} · E1 · R0"]["not_computed"]["value"] == 0.0
    assert estimates[f"{CHANNEL} rate · E2 · R1"]["not_computed"]["value"] == 0.0


def test_leaving_out_the_sensitivity_models_changes_nothing_else():
    inputs = crucible_inputs(evaluands=2, families=4, seeds=2, rungs=2, axes=1)
    parameters = {"bootstrap_replicates": "199", "acceptance_policies": "[]"}
    full = compute(inputs, parameters=parameters, seed=3)
    fast = compute(inputs, parameters=parameters, seed=3, sensitivity=False)
    assert full["sensitivity"] and fast["sensitivity"] == []
    assert {k: v for k, v in full.items() if k != "sensitivity"} == {
        k: v for k, v in fast.items() if k != "sensitivity"
    }
    assert crucible_world.fast_parameters({"bootstrap_replicates": "10000"}) == {
        "bootstrap_replicates": "999"
    }
    assert crucible_world.fast_parameters({"bootstrap_replicates": "200"}) == {
        "bootstrap_replicates": "200"
    }
