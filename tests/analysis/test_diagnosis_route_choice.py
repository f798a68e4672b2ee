"""The design diagnosis of seed 002's route-choice draft through the paired_blocks pipeline's
own compute (issue #35, "Checked by"): a planted large contrast is found in nearly every
simulation and a null contrast is "found" (its interval excludes 0) at about the interval's
nominal 5 %; the decision endpoint may be an oracle's rubric field or the route taken; the
curve varies the rounds; a decision endpoint the world cannot simulate is refused with the
reason."""

import math

import pytest

from apps.analysis.diagnosis.engine import diagnose_version, world_schema_of
from apps.analysis.pipelines.base import PlanInputError
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

QUIET = {"task_sd": 0.05, "block_sd": 0.05, "infrastructure_failure": 0.0, "missingness": 0.0}
PLANTED = {"effect:A:friction": 0.5, "effect:B:framing": -0.4}


def _draft(code, **parameters):
    """The demo's route-choice draft (2 models; sub-studies A and B of 8 tasks each) cut to 2
    rounds (16 task blocks per model and sub-study, above the intervals' floor of 10), one
    endpoint, 200 bootstrap replicates (the 0/1 endpoint's reported interval is the paired
    score interval, which draws nothing)."""
    from apps.demo.route_choice import route_choice_draft

    values = {
        "repetitions": "16",
        "min_task_blocks": "16",
        "bootstrap_replicates": "200",
        "endpoints": '["full_completion"]',
        "secondary_endpoints": "[]",
        "decision_endpoint": "full_completion",
    }
    return route_choice_draft(user=UserFactory(), code=code, parameters={**values, **parameters})


def test_a_large_contrast_is_found_and_null_ones_at_their_nominal_rate():
    draft = _draft("RC-DIAG")
    sims = 24
    document = diagnose_version(
        version=draft, world={**QUIET, **PLANTED, "baseline": 0.5}, sims=sims, seed=1
    )
    estimates = document["points"][0]["estimates"]
    for model in ("model-1", "model-2"):
        for name in ("A_friction", "B_framing"):
            found = estimates[f"{name} · {model}"]
            assert found["power"]["value"] >= 0.95, (name, model, found["power"])
            assert found["type_s_rate"]["value"] == 0.0
    # The null contrasts (the other main effects and the alternate × friction interaction, in
    # both sub-studies, for both models: 12 estimates, orthogonal contrasts of independent
    # blocks), pooled over 24 simulations: rejected at most at the nominal 5 %, within 2
    # binomial MC SE. The 8 tasks repeat over the 2 rounds, so this 0/1 endpoint's interval is
    # the score interval on the task-clustered effective pairs, conservative by construction
    # with 8 tasks (issue #36 §4, docs/analysis.md): it rejected 1.7 % here, so no bound below.
    nulls = [v for k, v in estimates.items() if k.split(" · ")[0] not in PLANTED_NAMES]
    assert len(nulls) == 12
    n = sims * len(nulls)
    rejected = sum(v["power"]["value"] for v in nulls) / len(nulls)
    se = math.sqrt(0.05 * 0.95 / n)  # 0.013
    assert rejected <= 0.05 + 2 * se, rejected
    # The planted contrasts' intervals hold their true values at least at the nominal 95 %
    # (pooled: 4 estimates × 24 simulations, 2 binomial MC SE = 0.044 below; the paired score
    # interval of a 0/1 endpoint may be conservative, so no bound above).
    held = sum(v["coverage"]["value"] for v in planted(estimates)) / 4
    assert held >= 0.95 - 2 * math.sqrt(0.05 * 0.95 / (sims * 4)), held
    # The planted contrasts' estimates are unbiased (no clipping at these rates): 3 MC SE each.
    for found in planted(estimates):
        assert abs(found["bias"]["value"]) <= 3 * found["bias"]["se"], found["bias"]


PLANTED_NAMES = ("A_friction", "B_framing")


def planted(estimates):
    return [v for k, v in estimates.items() if k.split(" · ")[0] in PLANTED_NAMES]


def test_the_route_taken_as_decision_endpoint_and_failures_in_their_own_stratum():
    draft = _draft("RC-ROUTE", endpoints='["alternate_route"]', decision_endpoint="alternate_route")
    document = diagnose_version(
        version=draft,
        world={
            **QUIET,
            "effect:A:alternate×friction": 0.0,
            "effect:A:friction": 0.6,
            "baseline": 0.4,
            "infrastructure_failure": 0.03,
            "missingness": 0.03,
        },
        sims=6,
        seed=2,
    )
    estimates = document["points"][0]["estimates"]
    assert estimates["A_friction · model-1"]["power"]["value"] == 1.0
    assert estimates["A_friction · model-1"]["not_computed"]["value"] == 0.0
    assert estimates["B_friction · model-1"]["mean_estimate"]["value"] == pytest.approx(0, abs=0.1)


def test_the_curve_varies_the_rounds():
    draft = _draft("RC-CURVE")
    document = diagnose_version(
        version=draft,
        world={**QUIET, **PLANTED},
        sims=3,
        seed=4,
        size="rounds",
        values=[2, 4],
    )
    assert document["size"]["draft"] == 2
    small, large = document["points"]
    assert large["administrations"] == 2 * small["administrations"]
    widths = [p["estimates"]["A_friction · model-1"]["mean_width"]["value"] for p in (small, large)]
    assert widths[1] < widths[0]


def test_an_endpoint_it_cannot_simulate_is_refused_with_the_reason():
    draft = _draft(
        "RC-NOSIM", endpoints='["authorised_route"]', decision_endpoint="authorised_route"
    )
    with pytest.raises(PlanInputError) as error:
        world_schema_of(draft)
    assert "authorised_route" in str(error.value)
    assert error.value.where == "parameter decision_endpoint"
    schema = world_schema_of(_draft("RC-SCHEMA"))["properties"]
    assert schema["effect:A:friction"]["minimum"] == -1.0
    assert "Sub-study A" in schema["effect:A:friction"]["description"]
    assert "effect:B:alternate×friction" in schema


def test_the_fast_path_computes_the_decision_endpoint_exactly_as_the_whole_plan():
    """The simulations compute only the decision endpoint (``fast_parameters``): on the same
    simulated data and seed, its contrasts, intervals and decisions are the whole plan's."""
    import json

    import numpy as np

    from apps.analysis import inputs as data
    from apps.analysis.diagnosis.engine import base_raw, version_world
    from apps.analysis.diagnosis.world import world_filled
    from apps.core.canonical import canonical_json

    draft = _draft(
        "RC-FAST",
        endpoints='["omission_disclosed", "full_completion"]',
        secondary_endpoints='["tokens", "alternate_route"]',
    )
    pipeline, model = version_world(draft)
    raw = base_raw(draft, pipeline)
    world = world_filled(model.schema(raw), {**QUIET, **PLANTED, "task_sd": 0.0, "block_sd": 0.0})
    simulated = model.simulate(raw, world, np.random.default_rng(8))
    inputs = json.loads(canonical_json(pipeline.assemble(simulated)))
    whole = data.plan_parameters(draft)
    fast = model.fast_parameters(whole)
    assert json.loads(fast["endpoints"]) == ["full_completion"]
    assert json.loads(fast["secondary_endpoints"]) == []

    def run(parameters):
        return pipeline.compute(inputs, parameters=parameters, seed=77)

    full, quick = run(whole), run(fast)
    mine = [r for r in full["contrasts"] if r["endpoint"] == "full_completion"]
    assert len(mine) < len(full["contrasts"])
    assert quick["contrasts"] == mine
    assert quick["decision"] == full["decision"]
    assert quick["controls"] == full["controls"]


@pytest.mark.parametrize("endpoint", ["items_completed", "tokens"])
def test_a_count_endpoint_rubric_field_or_session_column(endpoint):
    """A count (the oracle's ``items_completed``, the session's ``tokens``): the planted
    contrast is estimated without bias beyond its noise and found; its interval is the block
    bootstrap's."""
    draft = _draft(
        f"RC-{endpoint[:4].upper()}", endpoints=f'["{endpoint}"]', decision_endpoint=endpoint
    )
    document = diagnose_version(
        version=draft,
        world={
            **QUIET,
            "effect:A:friction": 3.0,
            "baseline": 20.0,
            "task_sd": 0.5,
            "block_sd": 0.5,
            "residual_sd": 1.0,
        },
        sims=4,
        seed=6,
    )
    found = document["points"][0]["estimates"]["A_friction · model-1"]
    assert found["power"]["value"] == 1.0
    assert found["not_computed"]["value"] == 0.0
    # Within a block the task's and block's effects cancel: one block's contrast (4 values
    # against 4) has variance 1/4 + 1/4 of the residual's, so one estimate over 16 blocks has
    # SD sqrt(0.5 / 16) = 0.18 and the mean of 4 about 0.09 (rounding adds 1/12 per value):
    # 0.5 is over 5 of those SDs.
    assert found["mean_estimate"]["value"] == pytest.approx(3.0, abs=0.5)
