"""The design diagnosis of an OPB-01-shaped draft through the opb pipeline's own compute
(issue #35, "Checked by"): a planted large slope of Family B is found in nearly every
simulation, and Family A's null slope (β_A = 0) is "found" (its interval excludes 0) at about
the interval's nominal 5 %. Short here; the long version runs under the ``calibration``
marker (``make calibrate``)."""

import json

import numpy as np
import pytest

from apps.analysis.diagnosis.engine import base_raw, diagnose_version, version_world
from apps.analysis.diagnosis.world import world_filled
from apps.analysis.inputs import plan_parameters
from apps.core.canonical import canonical_json
from tests.factories import opb_shaped_draft

pytestmark = pytest.mark.django_db

WORLD = {
    "slope:A": 0.0,
    "slope:B": 1.5,
    "item_sd": 0.3,
    "item_slope_sd": 0.0,
    "unit_error": 0.0,
    "missingness": 0.0,
}


def _diagnose(monkeypatch, sims, seed):
    draft = opb_shaped_draft(
        monkeypatch,
        code=f"OPB-DG{sims}",
        harm_constant=8,
        controls=8,
        pairs=0,
        force=0,
        evaluands=1,
        parameters={"repetitions": "2"},
    )
    document = diagnose_version(version=draft, world=WORLD, sims=sims, seed=seed)
    return {k.split(" · ")[0]: v for k, v in document["points"][0]["estimates"].items()}


def _check(estimates, k):
    planted = estimates["beta_B"]
    assert planted["power"]["value"] >= 0.9
    assert planted["type_s_rate"]["value"] == 0.0
    null = estimates["beta_A"]
    # Bias 0 for the null slope within k MC SE, and the finding at the nominal 5 %.
    assert abs(null["bias"]["value"]) <= k * null["bias"]["se"]
    assert null["power"]["value"] <= 0.05 + k * max(null["power"]["se"], 0.05 / k)
    assert null["coverage"]["value"] >= 0.95 - k * max(null["coverage"]["se"], 0.05 / k)
    # β_LF = β_A − β_B is planted at −1.5: found, with the right sign.
    assert estimates["beta_LF"]["power"]["value"] >= 0.9
    assert estimates["beta_LF"]["mean_estimate"]["value"] < 0


def test_planted_slope_found_and_null_slope_at_its_nominal_rate(monkeypatch):
    _check(_diagnose(monkeypatch, sims=12, seed=1), k=3)


@pytest.mark.calibration
def test_planted_and_null_slopes_long(monkeypatch):
    _check(_diagnose(monkeypatch, sims=300, seed=2), k=2)


def test_leaving_out_the_refusal_models_changes_nothing_else(monkeypatch):
    """The diagnosis's fast path (``compute_options``) drops only ``stage["refusal_model"]``:
    one simulated draw computed both ways gives the same document otherwise."""
    draft = opb_shaped_draft(
        monkeypatch, code="OPB-FAST", harm_constant=4, controls=4, pairs=0, force=0,
        evaluands=1, parameters={"repetitions": "2"},
    )  # fmt: skip
    pipeline, model = version_world(draft)
    assert model.compute_options == {"refusal_models": False}
    raw = base_raw(draft, pipeline)
    world = world_filled(model.schema(raw), {**WORLD, "refusal_rate": 0.3})
    simulated = model.simulate(raw, world, np.random.default_rng(5))
    inputs = json.loads(canonical_json(pipeline.assemble(simulated)))
    parameters = plan_parameters(draft)
    full = pipeline.compute(inputs, parameters=parameters, seed=9)
    fast = pipeline.compute(inputs, parameters=parameters, seed=9, **model.compute_options)
    with_models = [s for surface in full["surfaces"] for s in surface["stages"]]
    assert any("mixed_logit" in s.get("refusal_model", {}) for s in with_models)
    for surface in full["surfaces"]:
        for stage in surface["stages"]:
            stage.pop("refusal_model", None)
    assert full == fast
