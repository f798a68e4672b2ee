"""OPB-01's own history (seed 000): v1.0, with ε and the agreement threshold undefined, is refused
naming exactly those two; v1.1 with §7 instantiated freezes; the same steps give the same blob
hash; the diff of 1.0 and 1.1 shows the instantiated parameters."""

import json

import pytest
from django.db import transaction

from apps.demo.opb01 import AMENDMENT_RATIONALE, opb01_history_build, opb01_v1_0_draft
from apps.deviations.models import LogEntry
from apps.protocols.diffs import version_diff
from apps.protocols.gate import version_gate
from apps.protocols.models import Blob
from tests.factories import UserFactory

# OPB-01's own history, judged by the protocols app alone: an empty component registry
# (autouse in that module).
from tests.protocols.conftest import isolated_components  # noqa: F401

pytestmark = pytest.mark.django_db


def test_v1_0_is_refused_naming_exactly_epsilon_and_the_agreement_threshold(pi):
    v1_0 = opb01_v1_0_draft(pi=pi)
    problems = version_gate(version=v1_0)
    assert [(p.code, p.message) for p in problems] == [
        ("param_missing", "the equivalence margin ε has no value"),
        ("param_missing", "the agreement threshold has no value"),
    ]
    assert [p.url.rsplit("#", 1)[1] for p in problems] == [
        "param-epsilon",
        "param-agreement_minimum",
    ]


def test_the_history_builds_v1_1_frozen_over_a_set_aside_v1_0(pi):
    history = opb01_history_build(pi=pi)
    assert [p.message for p in history.refusal] == [
        "the equivalence margin ε has no value",
        "the agreement threshold has no value",
    ]
    assert (history.v1_0.state, history.v1_0.status, history.v1_0.sha256) == (
        "draft",
        "superseded",
        "",
    )
    assert (history.v1_1.label, history.v1_1.status) == ("1.1", "frozen")
    document = json.loads(bytes(Blob.objects.get(sha256=history.v1_1.sha256).content))
    assert document["supersedes"] == {"version": "1.0", "sha256": None}
    assert document["amendment_rationale"] == AMENDMENT_RATIONALE
    assert document["parameters"]["epsilon"]["value"] == "0.1"
    assert document["parameters"]["agreement_minimum"]["value"] == "0.667"
    # one log entry besides the grants: v1.0 was never registered; v1.1's registration is the
    # amendment
    entry = LogEntry.objects.exclude(kind="membership").get()
    assert entry.kind == "amendment"
    assert entry.rationale.startswith("v1.1 supersedes v1.0: Supersedes v1.0, which was frozen")


def _hash_of_a_fresh_run(username: str) -> str:
    with transaction.atomic():
        digest = opb01_history_build(pi=UserFactory(username=username)).v1_1.sha256
        transaction.set_rollback(True)  # leave nothing behind: the next run starts afresh
    return digest


def test_a_second_run_of_the_same_steps_gives_the_same_blob_hash():
    first = _hash_of_a_fresh_run("first-pi")
    second = _hash_of_a_fresh_run("another-pi")  # other user, other ids, later clock
    assert first == second
    assert len(first) == 64
    assert not Blob.objects.exists()  # both runs rolled back


def test_the_diff_of_1_0_and_1_1_shows_the_instantiated_parameters(pi, client):
    history = opb01_history_build(pi=pi)
    diff = version_diff(old=history.v1_0, new=history.v1_1)
    instantiated = {
        p["name"]: (p["from"], p["to"]) for p in diff["parameters"] if p["status"] == "instantiated"
    }
    assert instantiated == {"epsilon": ("", "0.1"), "agreement_minimum": ("", "0.667")}
    changed = {s["name"] for s in diff["sections"] if s["status"] != "unchanged"}
    assert changed == {"background", "hypotheses", "design", "exclusions", "analysis"}
    assert diff["amendment_rationale"]["status"] == "added"

    client.force_login(pi)
    html = client.get("/protocols/OPB-01/diff/?from=1.0&to=1.1").content.decode()
    assert 'class="param-instantiated" data-parameter="epsilon"' in html
    assert "<ins>0.1</ins>" in html and "<ins>0.667</ins>" in html
