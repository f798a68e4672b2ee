"""The design diagnosis of seed 002's route-choice draft through the paired_blocks pipeline's
own compute (issue #35, "Checked by"): a planted large contrast is found in nearly every
simulation, and a null contrast is "found" (its interval excludes 0) at about the interval's
nominal 5 %; the curve varies the rounds; a decision endpoint the world cannot simulate is
refused with the reason."""

import time

import pytest

from apps.analysis.diagnosis.engine import diagnose_version, world_schema_of
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def _draft(code, **parameters):
    from apps.demo.route_choice import route_choice_draft

    values = {
        "repetitions": "16",  # 2 rounds: 16 task blocks per model and sub-study
        "min_task_blocks": "16",
        "bootstrap_replicates": "200",
        "endpoints": '["full_completion"]',
        "secondary_endpoints": "[]",
        "decision_endpoint": "full_completion",
    }
    return route_choice_draft(user=UserFactory(), code=code, parameters={**values, **parameters})


def test_explore():
    draft = _draft("RC-DX")
    print(world_schema_of(draft)["properties"].keys())
    t = time.time()
    doc = diagnose_version(version=draft, world={"effect:A:friction": 0.5}, sims=4, seed=1)
    print(time.time() - t)
    for k, v in doc["points"][0]["estimates"].items():
        print(k, v["power"], v["mean_estimate"], v["coverage"])
    print(doc["points"][0]["stages"])
