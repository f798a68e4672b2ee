"""The demo's OPB-01 v1.1 freezes with the demo roster and its schedule."""

import json

import pytest

from apps.items.selectors import design_schedule_inputs
from apps.protocols.models import Blob, ProtocolVersion

pytestmark = pytest.mark.django_db


def test_the_demo_freezes_opb01_with_a_roster_and_a_schedule_of_five_repetitions(demo_database):
    v1_1 = ProtocolVersion.objects.get(protocol__code="OPB-01", label="1.1")
    document = json.loads(bytes(Blob.objects.get(sha256=v1_1.sha256).content))
    responses = document["responses"]
    assert [entry["code"] for entry in responses["roster"]] == ["surface-a", "surface-b"]
    cells = len(design_schedule_inputs(v1_1).cells)
    assert len(responses["schedule"]) == cells * 2 * 5 == v1_1.administrations.count()
    draft = ProtocolVersion.objects.get(protocol__code="DEMO-OPB", label="1.0")
    assert draft.roster.count() == 2
