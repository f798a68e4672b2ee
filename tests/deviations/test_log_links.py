"""Every link on a log page opens (issue #22).

The demo study is loaded through the services, then the kinds of entry it does not write are
written the way the product writes them (an exclusion, a score correction, the hand-recorded
kinds, a harm-review exclusion of an item, a withdrawal, a first freeze, a machine-score import
and an oracle run). Every protocol's log
page is rendered for its PI; every ref on it either links to a page that answers 200 to that
PI, or is of a type documented as plain text (``PLAIN_TEXT_TYPES``): a ref type no app registered
fails the test. Every kind of entry must appear.
"""

import ast
import json
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

import apps
from apps.accounts.models import User
from apps.demo.opb01 import V1_1_PARAMETERS, opb01_v1_0_draft
from apps.demo.study import DEMO_CODE, demo_version_prepare
from apps.deviations.models import MANUAL_KINDS, EntryKind, LogEntry
from apps.deviations.refs import PLAIN_TEXT_TYPES, ref_url, registered_ref_types, resolved_refs
from apps.deviations.services import deviation_append, deviation_record
from apps.items.refs import item_ref
from apps.protocols.models import Protocol, VersionState
from apps.protocols.refs import version_ref
from apps.protocols.services import (
    protocol_member_add,
    version_freeze,
    version_update,
    version_withdraw,
)
from apps.raters.models import RubricField, Score
from apps.raters.services import score_correct
from apps.responses.models import Attempt
from apps.responses.selectors import exclusion_reasons
from apps.responses.services import control_validation_record, exclusion_record
from tests.factories import (
    JUDGE,
    MembershipFactory,
    ProtocolFactory,
    UserFactory,
    jsonl,
    machine_study,
)
from tests.raters.test_oracle import EXPECTED, ORACLE, _with_fixtures

pytestmark = pytest.mark.django_db


def _write_the_kinds_the_demo_does_not(pi: User) -> None:
    frozen = Protocol.objects.get(code="OPB-01").versions.get(label="1.1")
    attempt = Attempt.objects.filter(version=frozen).select_related("administration").first()
    reason = next(iter(exclusion_reasons(frozen)))
    exclusion_record(attempt=attempt, reason_code=reason, rationale="Log-link test.", user=pi)
    # CRUCIBLE §7's control validation of an execution environment (the OPB demo has none).
    control_validation_record(
        version=frozen, environment="range-1", result="pass", rationale="Log-link test.", user=pi
    )
    score = Score.objects.filter(version=frozen).select_related("reviewer").first()
    derived = set(
        RubricField.objects.filter(version=frozen)
        .exclude(derivation="")
        .values_list("name", flat=True)
    )
    typed = {name: value for name, value in score.values.items() if name not in derived}
    score_correct(score=score, reviewer=score.reviewer, values=typed, reason="A typo.")
    for kind in MANUAL_KINDS:
        deviation_record(
            protocol=frozen.protocol,
            user=pi,
            rationale=f"A {kind} recorded by hand.",
            occurred_on=timezone.localdate(),
            kind=kind,
            refs=[version_ref(frozen)],
        )
    # A rerun entry carries the import's own refs (apps.responses.importing._log); the demo's
    # import has no reruns, so one is written here with those refs.
    imported = LogEntry.objects.filter(protocol=frozen.protocol, kind=EntryKind.IMPORT).first()
    deviation_append(
        protocol=frozen.protocol, kind=EntryKind.RERUN, rationale="A rerun.", refs=imported.refs
    )
    draft = Protocol.objects.get(code=DEMO_CODE).versions.get(state=VersionState.DRAFT)
    item = draft.items.order_by("code").first()
    # As harm_review_submit writes an item's exclusion (its verdicts are the reviewers' to give).
    deviation_append(
        protocol=draft.protocol,
        kind=EntryKind.EXCLUSION,
        rationale=f"Item {item.code} excluded by its harm-constancy review.",
        refs=[version_ref(draft), item_ref(item)],
    )
    # A role granted by the PI (removals write the same kind).
    protocol_member_add(
        protocol=frozen.protocol,
        username=UserFactory().username,
        role="auditor",
        actor=pi,
        reason="Log-link test.",
    )
    # An integrity alarm, as the integrity check writes it when a frozen row was changed.
    from apps.protocols.integrity import IntegrityVerdict, _record_alarm

    _record_alarm(
        frozen,
        IntegrityVerdict(frozen.pk, frozen.sha256, "0" * 64, ok=False, reason="Log-link test"),
    )
    version_withdraw(version=frozen, user=pi, reason="Log-link test.")
    # OPB-01's v1.1 is an amendment; a first version frozen as such writes a freeze entry.
    first = opb01_v1_0_draft(pi=pi, code="LINKS-01")
    version_update(version=first, user=pi, parameters=V1_1_PARAMETERS)
    demo_version_prepare(first, users={u.username: u for u in User.objects.all()})
    # Seed 003: a rubric text published at its content address writes a publication entry.
    from apps.raters.services.rubric_text import rubric_text_publish, rubric_text_set

    rubric_text_set(version=first, text="# A rubric\n\nLog-link test.\n")
    version_freeze(version=first, user=pi)
    rubric_text_publish(version=first, user=pi)
    # The public registry: a publication and a view-only link (apps/registry).
    from apps.registry.services import version_publish, view_link_create

    version_publish(version=first, user=pi)
    view_link_create(version=first, user=pi)


def _import_machine_scores_and_run_the_oracle(pi: User, on_commit) -> None:
    from apps.raters.services.machine import machine_scores_import, oracle_run_request

    protocol = ProtocolFactory()
    MembershipFactory(protocol=protocol, user=pi, role="pi")
    version = machine_study(
        protocol=protocol,
        pi=pi,
        fields=[
            {"name": "items_correct", "kind": "count", "scored_by": "scorer", "scorer_role": "o"},
            {"name": "verdict", "kind": "binary", "scored_by": "scorer", "scorer_role": "judge"},
        ],
        scorers={"oracle": ("o", ORACLE), "judge": ("judge", JUDGE)},
        items=["sort-1"],
        evaluands=("alpha",),
        answers={("sort-1", "alpha", 1): json.dumps(EXPECTED)},
        before_freeze=_with_fixtures,
    )
    rows = [{"position": 1, "scorer": "judge", "verdict": True}]
    machine_scores_import(version=version, user=pi, data=jsonl(rows), filename="judge.jsonl")
    with on_commit(execute=True):
        oracle_run_request(version=version, scorer_code="oracle", user=pi)


# Every log page of the demo (its copy, tests/states.py) and every link on it: slow under load.
@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_every_ref_on_every_log_page_links_to_a_page_that_opens(
    demo_database, client, django_capture_on_commit_callbacks
):
    pi = User.objects.get(username="pi")
    _write_the_kinds_the_demo_does_not(pi)
    _import_machine_scores_and_run_the_oracle(pi, django_capture_on_commit_callbacks)
    client.force_login(pi)

    entries = list(LogEntry.objects.select_related("protocol"))
    assert {entry.kind for entry in entries} == set(EntryKind.values)
    written_types = {ref["type"] for entry in entries for ref in entry.refs}
    assert {"machine_score_import", "oracle_run"} <= written_types
    assert written_types <= registered_ref_types() | PLAIN_TEXT_TYPES
    assert not registered_ref_types() & PLAIN_TEXT_TYPES

    followed = set()
    for protocol in Protocol.objects.filter(log_entries__isnull=False).distinct():
        page = client.get(reverse("deviations:log", args=[protocol.code]))
        assert page.status_code == 200
        html = page.content.decode()
        for entry in LogEntry.objects.filter(protocol=protocol):
            for ref in resolved_refs(entry.refs):
                if ref["type"] in PLAIN_TEXT_TYPES:
                    assert ref["url"] is None
                    continue
                assert ref["url"], f"{entry.kind} entry {entry.seq}: {ref} has no link"
                assert f'href="{ref["url"]}"' in html
                followed.add((ref["type"], ref["url"]))
    for ref_type, url in sorted(followed):
        assert client.get(url).status_code == 200, f"{ref_type} link {url}"
    assert {ref_type for ref_type, _ in followed} == written_types - PLAIN_TEXT_TYPES


def test_a_malformed_ref_is_plain_text_not_an_error():
    assert ref_url({"type": "attempt", "id": 1, "position": "x", "number": 1}, ("P", "1.0")) is None
    assert ref_url({"type": "nobody-registered", "id": 1}) is None
    assert ref_url({"type": "item", "id": 1, "label": "a-01"}, None) is None


def _ref_types_in_the_source() -> dict[str, str]:
    # A log ref is written as a dict literal with a constant "type" and an "id" (a JSON
    # Schema's {"type": "array", ...} has no "id"), or through the import frame's
    # import_refs(version, "<type>", record).
    found = {}
    for path in sorted(Path(apps.__file__).parent.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            kind = None
            if isinstance(node, ast.Dict):
                keys = {
                    key.value: value
                    for key, value in zip(node.keys, node.values, strict=True)
                    if isinstance(key, ast.Constant)
                }
                # A CSL-JSON citation item (apps/registry/citation.py) has an "id" and a
                # "type" too, and a title: it is no log ref.
                if "id" in keys and "title" not in keys:
                    kind = keys.get("type")
            elif (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", None) == "import_refs"
                and len(node.args) > 1
            ):
                kind = node.args[1]
            if isinstance(kind, ast.Constant) and isinstance(kind.value, str):
                found.setdefault(kind.value, f"{path.name}:{node.lineno}")
    return found


def test_every_ref_type_the_source_writes_is_registered_or_plain_text():
    written = _ref_types_in_the_source()
    assert {"version", "import", "machine_score_import", "oracle_run", "analysis_run"} <= set(
        written
    )
    unknown = {
        ref_type: where
        for ref_type, where in written.items()
        if ref_type not in registered_ref_types() | PLAIN_TEXT_TYPES
    }
    assert unknown == {}
