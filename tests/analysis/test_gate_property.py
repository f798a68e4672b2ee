"""Issue #32, "Checked by": for random small designs of each pipeline, the gate passes if and only
if the pipeline computes on synthetic data shaped like an import.

The gate checks a sample of a large design (``apps.analysis.gate_sample``); the property is that
sampling never changes the answer. Each example is a small draft built through the services; its
gate verdict is taken with a sample budget of 40 administrations and a floor of 4 clusters
(the plan's own floors still hold), and compared
with the pipeline run on the whole design's synthetic data (import-shaped: the documented
session fields, the rubric's scores), the budget then large enough that nothing is left out.
Few examples, small designs, ``deadline=None``: each example builds a draft.
"""

import itertools

import pytest
from django.core.cache import cache
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from apps.analysis import computability, gate_sample
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

_codes = itertools.count(1)
PROPERTY = settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,
)


def _verdicts(draft, monkeypatch) -> tuple[bool, bool, computability.Verdict]:
    """(the gate passes on a sample, the pipeline computes on the whole design, the gate's
    verdict)."""
    monkeypatch.setattr(computability, "SAMPLE_ADMINISTRATIONS", 40)
    monkeypatch.setattr(gate_sample, "MIN_SAMPLE_CLUSTERS", 4)  # let the sample cut deep
    cache.clear()
    gate = computability.version_computability(version=draft)
    monkeypatch.setattr(computability, "SAMPLE_ADMINISTRATIONS", 10**9)
    cache.clear()
    whole = computability.version_computability(version=draft)
    assert whole.administrations == whole.planned  # nothing left out
    # Both outcomes and sampled verdicts should occur (pytest --hypothesis-show-statistics).
    event(f"computes={not whole.problems}, sampled={gate.sampled}")
    return not gate.problems, not whole.problems, gate


@given(
    tasks=st.integers(min_value=2, max_value=10),
    rounds=st.integers(min_value=1, max_value=2),
    minimum=st.sampled_from([10, 16, 24]),
    models=st.integers(min_value=1, max_value=2),
)
@PROPERTY
def test_paired_blocks_the_gate_passes_iff_the_whole_design_computes(
    monkeypatch, tasks, rounds, minimum, models
):
    from apps.demo import route_choice

    monkeypatch.setattr(route_choice, "TASKS_PER_SUB_STUDY", tasks)
    monkeypatch.setattr(route_choice, "MODELS", dict(list(route_choice.MODELS.items())[:models]))
    draft = route_choice.route_choice_draft(
        user=UserFactory(),
        code=f"PROP-PB-{next(_codes)}",
        parameters={"repetitions": str(8 * rounds), "min_task_blocks": str(minimum)},
    )
    passes, computes, gate = _verdicts(draft, monkeypatch)
    assert passes == computes, gate.problems


@given(
    prompts=st.integers(min_value=2, max_value=30),
    evaluands=st.integers(min_value=1, max_value=3),
    min_clusters=st.sampled_from([6, 10, 25]),
)
@PROPERTY
def test_xstest_the_gate_passes_iff_the_whole_design_computes(
    monkeypatch, prompts, evaluands, min_clusters
):
    from tests.factories import xstest_shaped_draft

    draft = xstest_shaped_draft(prompts, code=f"PROP-XS-{next(_codes)}", evaluands=evaluands)
    from apps.protocols.services import version_update

    draft = version_update(
        version=draft,
        user=draft.created_by,
        parameters={"min_clusters": str(min_clusters)},
    )
    passes, computes, gate = _verdicts(draft, monkeypatch)
    assert passes == computes, gate.problems
