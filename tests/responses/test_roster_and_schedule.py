"""The responses component: the freeze gate's roster checks, the schedule at freeze, the frozen
document, and the roster's copy into an amendment."""

import json

import pytest
from django.core.exceptions import ValidationError

from apps.items.schedule import administration_schedule, schedule_sha256
from apps.items.selectors import design_schedule_inputs
from apps.protocols.components import registered_components
from apps.protocols.models import Blob
from apps.responses.components import responses_document, roster_checks, roster_copy
from apps.responses.models import Administration, RosterEntry
from apps.responses.services import roster_enroll, roster_remove
from tests.factories import (
    AnalysisParameterFactory,
    FactorFactory,
    ProtocolVersionFactory,
    build_draft,
    freeze,
    schedule_rows,
)

pytestmark = pytest.mark.django_db


def _codes(version) -> list[str]:
    return [problem.code for problem in roster_checks(version)]


def test_the_component_is_registered():
    assert "responses" in {component.name for component in registered_components()}


def test_an_empty_roster_blocks_the_freeze(protocol, pi):
    version = build_draft(protocol=protocol, user=pi, evaluands=())
    assert _codes(version) == ["roster_empty"]


def test_a_generic_protocol_with_nothing_to_administer_needs_no_roster(protocol, pi):
    protocol.template = "generic"
    protocol.save()
    version = build_draft(
        protocol=protocol, user=pi, items=0, evaluands=(), repetitions=None, seed=None
    )
    assert _codes(version) == []


def test_a_generic_protocol_with_cells_needs_a_roster(protocol, pi):
    protocol.template = "generic"
    protocol.save()
    version = build_draft(protocol=protocol, user=pi, evaluands=())
    assert _codes(version) == ["roster_empty"]


def test_repetitions_must_fill_the_design_factors_task_blocks(protocol, pi):
    version = build_draft(protocol=protocol, user=pi, repetitions=3)
    FactorFactory(version=version, name="friction", levels=["low", "high"])
    assert _codes(version) == ["repetitions_invalid"]
    assert "multiple of 2" in next(iter(roster_checks(version))).message


def test_the_plan_must_say_repetitions_and_seed(protocol, pi):
    version = build_draft(protocol=protocol, user=pi, repetitions=None, seed=None)
    assert _codes(version) == ["repetitions_missing", "seed_missing"]


def test_an_empty_required_parameter_is_left_to_the_plan_check(protocol, pi):
    version = build_draft(protocol=protocol, user=pi, repetitions=None, seed=None)
    AnalysisParameterFactory(version=version, name="repetitions", value="", required=True)
    AnalysisParameterFactory(version=version, name="seed", value="x", required=True)
    assert _codes(version) == ["seed_invalid"]


def test_zero_repetitions_is_invalid(protocol, pi):
    version = build_draft(protocol=protocol, user=pi, repetitions=0)
    assert _codes(version) == ["repetitions_invalid"]


def test_the_freeze_stores_every_present_cell_for_every_evaluand_and_repetition(protocol, pi):
    version = build_draft(
        protocol=protocol, user=pi, items=4, levels=("L0", "L1"), repetitions=3, absent=("it-2@L1",)
    )
    freeze(version, pi)
    rows = schedule_rows(version)
    assert len(rows) == (4 * 2 - 1) * 2 * 3
    assert len(set(rows)) == len(rows)
    assert ("it-2", "L1", "alpha", 1) not in rows
    positions = list(
        Administration.objects.filter(version=version)
        .order_by("position")
        .values_list("position", flat=True)
    )
    assert positions == list(range(1, len(rows) + 1))


def test_the_schedule_follows_the_plans_seed(protocol, pi):
    first = freeze(build_draft(protocol=protocol, user=pi, items=6, seed=11), pi)
    same = freeze(build_draft(protocol=protocol, user=pi, items=6, seed=11, label="1.1"), pi)
    other = freeze(build_draft(protocol=protocol, user=pi, items=6, seed=12, label="1.2"), pi)
    assert schedule_rows(first) == schedule_rows(same)
    assert schedule_rows(first) != schedule_rows(other)


def test_the_document_holds_the_roster_with_identities_and_the_ordered_schedule(frozen):
    document = responses_document(frozen)
    assert [entry["code"] for entry in document["roster"]] == ["alpha", "beta"]
    alpha = document["roster"][0]
    assert alpha["identity"]["model"] == "model-alpha"
    assert len(alpha["identity_sha256"]) == 64
    schedule = document["schedule"]
    assert [entry["position"] for entry in schedule] == [1, 2, 3, 4, 5, 6]
    expected = [tuple(row) for row in schedule_rows(frozen)]
    assert [(e["item"], e["level"], e["evaluand"], e["repetition"]) for e in schedule] == expected
    assert schedule[0]["assignment"] == {}
    # Anyone can regenerate the schedule from the frozen seed and compare digests.
    inputs = design_schedule_inputs(frozen)
    regenerated = administration_schedule(
        cells=inputs.cells, evaluands=["alpha", "beta"], repetitions=1, seed=7, strata=inputs.strata
    )
    assert document["schedule_sha256"] == schedule_sha256(regenerated)


def test_the_frozen_blob_holds_the_roster_and_schedule(frozen):
    blob = Blob.objects.get(sha256=frozen.sha256)
    document = json.loads(bytes(blob.content))
    assert document["responses"] == responses_document(frozen)
    assert len(document["responses"]["schedule"]) == 6


def test_the_roster_is_copied_into_an_amendment_but_not_the_schedule(frozen):
    amendment = ProtocolVersionFactory(protocol=frozen.protocol, label="1.1")
    roster_copy(frozen, amendment)
    assert list(RosterEntry.objects.filter(version=amendment).values_list("code", flat=True)) == [
        "alpha",
        "beta",
    ]
    assert not Administration.objects.filter(version=amendment).exists()


def test_the_roster_of_a_frozen_version_cannot_change(frozen, pi):
    entry = RosterEntry.objects.filter(version=frozen).first()
    with pytest.raises(ValidationError, match="frozen"):
        roster_remove(entry=entry, user=pi)
    with pytest.raises(ValidationError, match="frozen"):
        roster_enroll(version=frozen, evaluand=entry.evaluand, code="again", user=pi)


def test_a_code_or_evaluand_is_enrolled_once(protocol, pi):
    version = build_draft(protocol=protocol, user=pi)
    entry = RosterEntry.objects.filter(version=version, code="alpha").get()
    with pytest.raises(ValidationError, match="already on this roster"):
        roster_enroll(version=version, evaluand=entry.evaluand, code="alpha2", user=pi)
    with pytest.raises(ValidationError, match="'alpha' is already"):
        roster_enroll(
            version=version,
            evaluand=RosterEntry.objects.get(version=version, code="beta").evaluand,
            code="alpha",
            user=pi,
        )
