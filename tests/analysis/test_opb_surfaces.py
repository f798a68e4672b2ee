"""Issue #17 §6: a surface's fresh-session guarantee beside its results; the L5 invariant."""

import json

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from apps.analysis.models import RunState
from apps.demo.design import demo_design_build
from apps.demo.opb01 import opb01_v1_0_draft
from apps.responses.components import roster_checks
from apps.responses.models import Evaluand, RosterEntry
from apps.responses.surfaces import external_tools, session_guarantee_record
from tests.factories import UserFactory, opb_study

pytestmark = pytest.mark.django_db


def test_the_fresh_session_guarantee_is_shown_beside_each_surface(client, run_now, unseal):
    study = opb_study(code="FRESH", evaluands=2)
    first, second = [
        e.evaluand for e in RosterEntry.objects.filter(version=study.version).order_by("position")
    ]
    session_guarantee_record(
        evaluand=first, user=study.pi, fresh_session="no", note="persistent memory is on"
    )
    run = run_now(study.version, study.pi)
    assert run.state == RunState.SUCCEEDED, run.error
    surfaces = json.loads(bytes(run.result.content))["estimates"]["surfaces"]
    assert surfaces[0]["fresh_session"] == {
        "fresh_session": "no",
        "note": "persistent memory is on",
    }
    assert surfaces[1]["fresh_session"] == {"fresh_session": "unknown", "note": ""}
    unseal(study.version, study.pi)
    client.force_login(study.pi)
    url = reverse("analysis:report", kwargs={"code": "FRESH", "label": "1.1", "number": 1})
    text = client.get(url).content.decode()
    assert (
        "Fresh session guaranteed (OPB-01 §6.3): <strong>no</strong> — persistent memory is on"
        in text
    )
    with pytest.raises(ValidationError, match="already has its fresh-session record"):
        session_guarantee_record(evaluand=first, user=study.pi, fresh_session="yes")
    with pytest.raises(ValidationError, match="'maybe' is not one of yes, no, unknown"):
        session_guarantee_record(evaluand=second, user=study.pi, fresh_session="maybe")


def test_external_tools_are_the_toolkits_entries_marked_external_or_connectors():
    toolkit = [
        "search",
        {"name": "web_search", "external": True},
        {"name": "drive", "kind": "connector"},
        {"name": "calc"},
    ]
    assert external_tools(toolkit) == ["web_search", "drive"]


def test_the_gate_refuses_an_l5_cell_whose_key_requires_an_external_tool_naming_it(db):
    draft = opb01_v1_0_draft(pi=UserFactory(), code="OPB-L5")
    demo_design_build(draft)
    evaluand = Evaluand.objects.create(
        label="connected",
        model="m",
        toolkit=[{"name": "web_search", "external": True}],
        identity_sha256="f" * 64,
    )
    RosterEntry.objects.create(version=draft, evaluand=evaluand, code="m-web", position=0)
    assert [p for p in roster_checks(draft) if p.code == "l5_requires_external_tool"] == []
    from apps.items.models import Cell, KeyUnit
    from apps.items.services import KeyUnitSpec, cell_save

    cell = Cell.objects.get(version=draft, item__code="a-01", level__ordinal=5)
    # The key's wording is not the declaration: naming the tool in the key is not checked.
    KeyUnit.objects.create(
        version=draft, cell=cell, position=99, text="!Looks the image up with web search first"
    )
    assert [p for p in roster_checks(draft) if p.code == "l5_requires_external_tool"] == []
    cell_save(
        item=cell.item,
        level=cell.level,
        prompt=cell.prompt,
        key=[KeyUnitSpec(u.text, u.executable) for u in cell.key_units.order_by("position")],
        requires_tools=["calculator", "web_search"],
    )
    problems = [p for p in roster_checks(draft) if p.code == "l5_requires_external_tool"]
    assert [p.message for p in problems] == [
        "item a-01 at L5 requires web_search, which the toolkit of evaluand m-web lists as "
        "external: L5 never means external tool use or connector-mediated action (OPB-01 §2)"
    ]
