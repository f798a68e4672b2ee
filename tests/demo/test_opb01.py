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


def test_the_history_builds_v1_1_frozen_over_a_deposited_v1_0(pi):
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
    # v1.0 was never registered here: it is deposited (an import of the record), and v1.1's
    # registration is the amendment; the grants are membership entries
    deposit, entry = LogEntry.objects.exclude(kind="membership").order_by("pk")
    assert deposit.kind == "import" and "OPB-01 v1.0 deposited as history" in deposit.rationale
    assert entry.kind == "amendment"
    assert entry.rationale.startswith("v1.1 supersedes v1.0: Supersedes v1.0, which was frozen")


def test_v1_0_is_deposited_exactly_and_never_passes_the_gate(pi):
    import hashlib

    from apps.demo.opb01 import v1_0_text
    from apps.protocols.services import VersionStateError, version_freeze, version_update

    history = opb01_history_build(pi=pi)
    v1_0 = history.v1_0
    assert v1_0.is_deposited
    text = v1_0_text()
    assert v1_0.deposit.blob.sha256 == hashlib.sha256(text).hexdigest()
    assert bytes(v1_0.deposit.blob.content) == text
    assert "ρ_OP = β_A / β_B is the primary index".encode() in text
    assert v1_0.deposit.frozen_on is None and "Superseded by v1.1" in v1_0.deposit.note
    with pytest.raises(VersionStateError, match="frozen elsewhere and is deposited"):
        version_freeze(version=v1_0, user=pi)
    with pytest.raises(VersionStateError, match="frozen elsewhere and is deposited"):
        version_update(version=v1_0, user=pi, sections={"background": "changed"})


def test_a_deposited_version_is_never_analysed(pi):
    from apps.analysis.services import analysis_run_request

    history = opb01_history_build(pi=pi)
    with pytest.raises(Exception) as caught:
        analysis_run_request(version=history.v1_0, user=pi)
    assert "frozen" in str(caught.value)


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


def test_the_version_page_shows_the_deposit(pi, client):
    history = opb01_history_build(pi=pi)
    client.force_login(pi)
    from django.urls import reverse

    page = client.get(reverse("protocols:version", args=["OPB-01", "1.0"]))
    text = page.content.decode()
    assert "Deposited: frozen elsewhere" in text
    assert history.v1_0.deposit.blob_id in text
    assert client.get(f"/api/v1/blob/{history.v1_0.deposit.blob_id}").status_code == 200


def test_v1_1_declares_contaminated_specimens_as_an_exclusion_reason(pi):
    from apps.responses.selectors import exclusion_reasons

    history = opb01_history_build(pi=pi)
    reasons = exclusion_reasons(history.v1_1)
    assert reasons["contaminated_specimen"].startswith("Contaminated specimen (OPB-01 §11)")
