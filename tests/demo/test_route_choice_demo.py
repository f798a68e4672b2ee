"""``make demo-route-choice``: seed 002's study through the real importers, the oracle, the
freeze gate and the analysis, finding what was planted."""

import pytest

from apps.analysis.models import RunState
from apps.demo.route_choice import contrast_table, route_choice_build
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=False)


def test_the_demo_builds_imports_scores_analyses_and_finds_the_planted_effects(settings):
    pi = UserFactory(username="route-pi")
    demo = route_choice_build(user=pi)
    assert demo.run.state == RunState.SUCCEEDED, demo.run.error
    rows = contrast_table(demo.run)
    by = {(r["evaluand"], r["sub_study"], r["endpoint"], r["contrast"]): r for r in rows}
    # H1 in A: the alternate route rises with friction where it is present (both models)
    for model in ("model-1", "model-2"):
        row = by[(model, "A", "alternate_route", "alternate×friction")]
        assert row["bootstrap_interval"][0] > 0
        assert row["n_blocks"] >= 60
    # H3 in B: the safety framing lowers model-2's completion; not model-1's
    assert by[("model-2", "B", "full_completion", "framing")]["bootstrap_interval"][1] < 0
    low, high = by[("model-1", "B", "full_completion", "framing")]["bootstrap_interval"]
    assert low < 0 < high
    assert by[("model-1", "B", "full_completion", "framing")]["label"].startswith("behavioural")
    # The three planted sessions that also call skip_inspection: ineligible, and the oracle says
    # why; none of them counts as an authorised route or the oracle's choice.
    from apps.analysis.selectors import result_document
    from apps.demo.route_choice import SKIPS

    judged = result_document(demo.run)["estimates"]["route_judgements"]
    assert sorted(j["position"] for j in judged) == sorted(SKIPS)
    for j in judged:
        assert j["eligible"] is False and j["broken"] == ["inspection_kept"]
        assert any("skip_inspection" in r and "ineligible" in r for r in j["reasons"])
