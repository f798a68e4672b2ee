"""Issue #32 §2: above a size the computability gate runs as a Celery task with progress; the
draft page polls its progress and the freeze waits for its verdict (cached by document hash)."""

import pytest
from django.core.cache import cache

from apps.analysis import computability
from apps.demo.route_choice import route_choice_draft
from apps.protocols.gate import version_gate
from apps.protocols.services import FreezeRefused, version_freeze
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_verdicts():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def queued(monkeypatch):
    """A worker that has not picked the task up yet: the task is recorded, not run."""
    from apps.analysis import tasks

    sent = []
    monkeypatch.setattr(tasks.computability_check, "delay", lambda *args: sent.append(args))
    return sent


def test_a_large_design_is_checked_in_a_worker_and_the_freeze_waits_for_its_verdict(queued, client):
    pi = UserFactory()
    # the demo's design: 19 tasks × 2 models × 64 repetitions = 2,432 administrations
    draft = route_choice_draft(user=pi, code="ROUTE-W")
    assert computability._planned(draft) > computability.ASYNC_ABOVE
    problems = version_gate(version=draft)
    assert [p.code for p in problems] == ["computability_pending"]
    assert problems[0].progress == 0 and "the freeze waits for its verdict" in problems[0].message
    assert len(queued) == 1
    version_gate(version=draft)
    assert len(queued) == 1  # queued once per document hash, not once per look

    client.force_login(pi)
    page = client.get(f"/protocols/{draft.protocol.code}/v/{draft.label}/checklist/")
    text = page.content.decode()
    assert page.status_code == 200
    assert 'hx-trigger="every 2s"' in text and "<progress" in text
    edit = client.get(f"/protocols/{draft.protocol.code}/v/{draft.label}/edit/").content.decode()
    assert "computability_pending" in edit and "checklist/" in edit

    with pytest.raises(FreezeRefused) as refused:
        version_freeze(version=draft, user=pi)
    assert [p.code for p in refused.value.problems] == ["computability_pending"]

    # The worker runs the task: progress is reported while it runs, then the verdict is cached.
    seen = []
    real_set = cache.set

    def spy(key, value, *args, **kwargs):
        if key.endswith(":progress"):
            seen.append(value["percent"])
        return real_set(key, value, *args, **kwargs)

    version_id, key = queued[0]
    cache.set = spy
    try:
        assert computability.computability_perform(version_id=version_id, key=key) == "computable"
    finally:
        cache.set = real_set
    assert seen and seen == sorted(seen) and max(seen) > 10
    assert version_gate(version=draft) == []
    page = client.get(f"/protocols/{draft.protocol.code}/v/{draft.label}/checklist/")
    assert 'hx-trigger="every 2s"' not in page.content.decode()
    assert version_freeze(version=draft, user=pi).state == "frozen"


def test_a_worker_that_finds_the_draft_changed_lets_the_next_look_queue_it_again(queued):
    from apps.protocols.services import version_update

    pi = UserFactory()
    draft = route_choice_draft(user=pi, code="ROUTE-W2")
    version_gate(version=draft)
    version_id, key = queued[0]
    draft = version_update(version=draft, user=pi, parameters={"interval_coverage": "0.9"})
    computability.computability_perform(version_id=version_id, key=key)
    assert version_gate(version=draft) == []  # the worker checked what the draft now holds
    assert cache.get(f"{key}:queued") is None


def test_a_small_design_is_checked_in_the_request():
    from apps.analysis.tasks import computability_check

    pi = UserFactory()
    draft = route_choice_draft(
        user=pi, code="ROUTE-S", parameters={"repetitions": "16", "min_task_blocks": "16"}
    )
    assert computability._planned(draft) <= computability.ASYNC_ABOVE
    calls = []
    original = computability_check.delay
    computability_check.delay = lambda *a: calls.append(a)
    try:
        assert version_gate(version=draft) == []
    finally:
        computability_check.delay = original
    assert calls == []


def test_a_broker_that_cannot_be_reached_leaves_the_gate_in_the_request(monkeypatch):
    from apps.analysis import tasks

    def down(*args):
        raise ConnectionError("broker down")

    monkeypatch.setattr(tasks.computability_check, "delay", down)
    pi = UserFactory()
    draft = route_choice_draft(user=pi, code="ROUTE-D")
    assert version_gate(version=draft) == []  # answered here, never a 500
