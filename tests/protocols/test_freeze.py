"""Freezing: refused with every problem at once; otherwise the canonical document is hashed,
stored as a blob, the version sealed and a log entry written in the same transaction."""

import json
import re

import pytest
from django.core.exceptions import ValidationError

from apps.core.canonical import canonical_json, sha256_hex
from apps.deviations.models import LogEntry, OutcomeUnsealing
from apps.protocols.components import Problem, VersionComponent, register_component
from apps.protocols.documents import version_document
from apps.protocols.models import Blob
from apps.protocols.services import (
    FreezeRefused,
    VersionStateError,
    version_amend,
    version_freeze,
    version_update,
)

pytestmark = pytest.mark.django_db


def test_freeze_is_refused_while_epsilon_is_missing_naming_every_problem(ready_draft, creator):
    version_update(
        version=ready_draft,
        user=creator,
        parameters={"epsilon": "", "agreement_minimum": ""},
    )
    with pytest.raises(FreezeRefused) as refusal:
        version_freeze(version=ready_draft, user=creator)
    assert refusal.value.messages == [
        "param_missing: the equivalence margin ε has no value",
        "param_missing: the agreement threshold has no value",
    ]
    ready_draft.refresh_from_db()
    assert ready_draft.state == "draft"
    assert not Blob.objects.exists()
    assert not LogEntry.objects.exclude(kind="membership").exists()


def test_freeze_hashes_the_canonical_document_and_stores_it_as_a_blob(frozen, creator):
    assert frozen.state == "frozen"
    assert frozen.frozen_by == creator
    assert frozen.frozen_at is not None
    blob = Blob.objects.get(sha256=frozen.sha256)
    content = bytes(blob.content)
    assert sha256_hex(content) == frozen.sha256
    assert blob.size == len(content)
    document = json.loads(content)
    assert content == canonical_json(document)  # sorted keys, no insignificant whitespace
    assert document == version_document(version=frozen)
    assert document["protocol"] == {
        "code": "OPB-T",
        "title": "Operativity test",
        "template": "opb",
    }
    assert document["version"] == "1.0"
    assert document["parameters"]["epsilon"]["value"] == "0.1"
    assert document["parameters"]["n_per_cell"]["minimum"] == "5"
    assert document["sections"]["analysis"] == "Beta regression for F_att."
    assert document["supersedes"] is None


def test_the_document_holds_natural_keys_only_no_ids_times_or_usernames(frozen, creator):
    text = bytes(Blob.objects.get(sha256=frozen.sha256).content).decode()
    document = json.loads(text)
    assert set(document) == {
        "document",
        "protocol",
        "version",
        "sections",
        "parameters",
        "decision_table",
        "supersedes",
        "amendment_rationale",
    }
    assert set(document["parameters"]["seed"]) == {
        "label",
        "kind",
        "value",
        "unit",
        "required",
        "choices",
        "minimum",
        "maximum",
        "position",
        "help_text",  # revision 2 of the document (issue #33)
    }
    assert creator.username not in text
    assert not re.search(r"\d{4}-\d{2}-\d{2}T\d{2}:", text)


def test_freeze_writes_a_freeze_entry_naming_the_hash(frozen, creator):
    entry = LogEntry.objects.exclude(kind="membership").get()
    assert entry.kind == "freeze"
    assert entry.actor == creator
    assert frozen.sha256 in entry.rationale
    assert entry.refs == [
        {"type": "version", "id": frozen.pk, "label": "OPB-T v1.0", "sha256": frozen.sha256}
    ]
    assert entry.outcome_visible is False


def test_freezing_twice_is_refused(frozen, creator):
    with pytest.raises(VersionStateError, match="is frozen"):
        version_freeze(version=frozen, user=creator)
    assert LogEntry.objects.exclude(kind="membership").count() == 1


def test_components_freeze_with_the_version_and_enter_its_document(ready_draft, creator):
    seen = []
    register_component(
        VersionComponent(
            name="items",
            on_freeze=lambda version: seen.append(version.state),
            document=lambda version: [{"item": "A-1", "levels": [0, 1, 2]}],
        )
    )
    frozen = version_freeze(version=ready_draft, user=creator)
    assert seen == ["draft"]  # on_freeze runs before the version is sealed
    document = json.loads(bytes(Blob.objects.get(sha256=frozen.sha256).content))
    assert document["items"] == [{"item": "A-1", "levels": [0, 1, 2]}]


def test_a_failing_component_leaves_nothing_half_done(ready_draft, creator):
    def explode(version):
        raise ValidationError("the schedule could not be generated")

    register_component(VersionComponent(name="responses", on_freeze=explode))
    with pytest.raises(ValidationError):
        version_freeze(version=ready_draft, user=creator)
    ready_draft.refresh_from_db()
    assert (ready_draft.state, ready_draft.sha256) == ("draft", "")
    assert not Blob.objects.exists() and not LogEntry.objects.exclude(kind="membership").exists()


def test_component_problems_block_the_freeze(ready_draft, creator):
    register_component(
        VersionComponent(name="raters", checks=lambda v: [Problem("no_rubric", "no rubric")])
    )
    with pytest.raises(FreezeRefused) as refusal:
        version_freeze(version=ready_draft, user=creator)
    assert [p.code for p in refusal.value.problems] == ["no_rubric"]


def test_an_amendment_freezes_with_its_rationale_in_an_amendment_entry(frozen, creator):
    amendment = version_amend(version=frozen, user=creator)
    version_update(
        version=amendment,
        user=creator,
        parameters={"epsilon": "0.05"},
        amendment_rationale="ε = 0.1 was wider than the pilot's noise.",
    )
    amendment = version_freeze(version=amendment, user=creator)
    entry = LogEntry.objects.order_by("-seq").first()
    assert entry.kind == "amendment"
    assert entry.rationale == "v1.1 supersedes v1.0: ε = 0.1 was wider than the pilot's noise."
    assert [ref["label"] for ref in entry.refs] == ["OPB-T v1.1", "OPB-T v1.0"]
    document = json.loads(bytes(Blob.objects.get(sha256=amendment.sha256).content))
    assert document["supersedes"] == {"version": "1.0", "sha256": frozen.sha256}
    assert document["amendment_rationale"] == "ε = 0.1 was wider than the pilot's noise."
    frozen.refresh_from_db()
    assert frozen.status == "superseded"


def test_an_amendment_after_outcomes_were_seen_is_marked_so_by_the_system(frozen, creator):
    OutcomeUnsealing.objects.create(version=frozen, unsealed_by=creator, confirmation="yes")
    amendment = version_amend(version=frozen, user=creator)
    version_update(version=amendment, user=creator, amendment_rationale="Seen; still amending.")
    version_freeze(version=amendment, user=creator)
    assert LogEntry.objects.order_by("-seq").first().outcome_visible is True


def test_browser_line_breaks_give_the_same_document_as_the_api(ready_draft, creator):
    version_update(version=ready_draft, user=creator, sections={"design": "a\r\nb\rc"})
    ready_draft.refresh_from_db()
    assert ready_draft.design == "a\nb\nc"
