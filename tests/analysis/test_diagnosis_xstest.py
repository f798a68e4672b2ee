"""The design diagnosis of an XSTest-shaped draft through the xstest pipeline's own compute
(issue #35, "Checked by": a planted large effect gives power near 1, a null gives the finding
at about its nominal rate; reproducible from the seed; the world's ranges enforced)."""

import pytest

from apps.analysis.diagnosis.engine import diagnose_version, world_schema_of
from apps.analysis.diagnosis.world import WorldError
from tests.factories import xstest_shaped_draft

pytestmark = pytest.mark.django_db

REFUSAL = "rate:S:2_full_refusal"
PARTIAL = "rate:S:3_partial_refusal"
PERFECT = {"item_icc": 0.0, "reviewer_accuracy": 1.0, "missingness": 0.0}


def _refusal_on_safe(document, evaluand="m0"):
    return document["points"][0]["estimates"][f"2_full_refusal rate · {evaluand} · S"]


def test_a_large_refusal_rate_is_found_and_a_null_one_at_most_at_its_nominal_rate():
    draft = xstest_shaped_draft(60, code="XS-DIAG", evaluands=1)
    large = diagnose_version(
        version=draft,
        world={**PERFECT, REFUSAL: 0.5, PARTIAL: 0.0, "reference_rate": 0.05},
        sims=30,
        seed=1,
    )
    found = _refusal_on_safe(large)
    assert found["power"]["value"] > 0.95
    # Unbiased with perfect reviewers: bias 0 within 3 MC SE.
    assert abs(found["bias"]["value"]) <= 3 * found["bias"]["se"]
    null = diagnose_version(
        version=draft,
        world={**PERFECT, REFUSAL: 0.05, PARTIAL: 0.0, "reference_rate": 0.05},
        sims=120,
        seed=2,
    )
    found = _refusal_on_safe(null)
    # One-sided at 2.5 % (the 95 % interval's lower bound above the true rate); the
    # Korn–Graubard interval is conservative, so at most that, within 2 MC SE.
    assert found["power"]["value"] <= 0.025 + 2 * max(found["power"]["se"], 0.011)
    assert found["coverage"]["value"] >= 0.95 - 2 * max(found["coverage"]["se"], 0.015)


def test_unreliable_reviewers_bias_the_rate_toward_the_guess():
    """A reviewer who guesses a third of the time pulls a 0 % rate up: the diagnosis shows the
    bias the real study would carry (the planted truth is 0)."""
    draft = xstest_shaped_draft(40, code="XS-BIAS", evaluands=1)
    document = diagnose_version(
        version=draft,
        world={**PERFECT, REFUSAL: 0.0, PARTIAL: 0.0, "reviewer_accuracy": 0.4},
        sims=30,
        seed=3,
    )
    found = _refusal_on_safe(document)
    assert found["bias"]["value"] > 3 * found["bias"]["se"] > 0


def test_reproducible_from_its_seed_and_the_curve_grows_with_items_per_family():
    draft = xstest_shaped_draft(20, code="XS-CURVE", evaluands=1)
    world = {**PERFECT, REFUSAL: 0.12, PARTIAL: 0.0}
    first = diagnose_version(
        version=draft, world=world, sims=20, seed=5, size="items_per_family", values=[8, 40]
    )
    again = diagnose_version(
        version=draft, world=world, sims=20, seed=5, size="items_per_family", values=[8, 40]
    )
    assert first == again
    small, large = first["points"]
    assert (small["size"], large["size"]) == (8, 40)
    assert large["administrations"] == 5 * small["administrations"]
    width = [
        p["estimates"]["2_full_refusal rate · m0 · S"]["mean_width"]["value"]
        for p in first["points"]
    ]
    assert width[1] < width[0]
    # Below the plan's floor of clusters no interval is drawn: said, not hidden.
    tiny = diagnose_version(
        version=draft, world=world, sims=5, seed=5, size="items_per_family", values=[3]
    )
    assert (
        tiny["points"][0]["estimates"]["2_full_refusal rate · m0 · S"]["coverage"]["value"] is None
    )


def test_the_world_is_validated_against_its_schema_with_the_property_named():
    draft = xstest_shaped_draft(4, code="XS-SCHEMA", evaluands=1)
    schema = world_schema_of(draft)
    assert schema["properties"]["item_icc"]["maximum"] == 0.9
    assert schema["properties"][REFUSAL]["description"]
    with pytest.raises(WorldError) as error:
        diagnose_version(version=draft, world={"item_icc": 1.5}, sims=2, seed=1)
    assert error.value.where == "item_icc"
    with pytest.raises(WorldError) as error:
        diagnose_version(version=draft, world={"beta_q": 1}, sims=2, seed=1)
    assert error.value.where == "beta_q"
    with pytest.raises(WorldError) as error:
        diagnose_version(version=draft, world={REFUSAL: 0.7, PARTIAL: 0.6}, sims=2, seed=1)
    assert error.value.where == REFUSAL
