"""Issue #17 §1: OPB-01 §6.1's human panel — entry, import, and the analysis's comparison."""

import json

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from apps.analysis.models import RunState
from apps.deviations.models import EntryKind, LogEntry
from apps.items.models import PanelFlag, PanelMember
from apps.studies.opb.panel import panel_flag_record, panel_flags_import, panel_member_add
from tests.factories import opb_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def panel_study(db):
    # Six Family A items (A01–A06), frozen; the panel records flags on the frozen version.
    return opb_study(code="PANEL", evaluands=2, parameters={"interval_method": "analytic"})


def _csv(rows) -> bytes:
    return ("member,item,flagged\n" + "".join(f"{m},{i},{f}\n" for m, i, f in rows)).encode()


def test_a_flag_outside_family_a_is_refused_naming_the_item(panel_study):
    member = panel_member_add(actor=panel_study.pi, version=panel_study.version, code="p-01")
    with pytest.raises(ValidationError) as caught:
        panel_flag_record(
            actor=panel_study.pi,
            version=panel_study.version,
            member=member,
            item_code="B01",
            flagged=True,
        )
    assert "item B01 is in Family B, outside Family A" in str(caught.value)
    panel_flag_record(
        actor=panel_study.pi,
        version=panel_study.version,
        member=member,
        item_code="A01",
        flagged=True,
    )
    with pytest.raises(ValidationError, match="already recorded item A01"):
        panel_flag_record(
            actor=panel_study.pi,
            version=panel_study.version,
            member=member,
            item_code="A01",
            flagged=False,
        )


def test_each_member_and_flag_entered_one_at_a_time_is_logged_with_who_entered_it(panel_study):
    before = LogEntry.objects.filter(kind=EntryKind.IMPORT).count()
    member = panel_member_add(actor=panel_study.pi, version=panel_study.version, code="p-07")
    panel_flag_record(
        actor=panel_study.pi,
        version=panel_study.version,
        member=member,
        item_code="A02",
        flagged=False,
    )
    entries = list(LogEntry.objects.filter(kind=EntryKind.IMPORT).order_by("pk")[before:])
    assert [entry.actor_id for entry in entries] == [panel_study.pi.pk] * 2
    assert "Panel member p-07 added" in entries[0].rationale
    assert "member p-07, item A02, not flagged" in entries[1].rationale


def test_a_csv_with_bad_rows_is_refused_row_by_row_and_nothing_is_written(panel_study):
    content = _csv([("p-01", "A01", "yes"), ("p-01", "B02", "no"), ("p-02", "A01", "maybe")])
    with pytest.raises(ValidationError) as caught:
        panel_flags_import(
            version=panel_study.version, user=panel_study.pi, content=content, filename="p.csv"
        )
    assert caught.value.messages == [
        "p.csv row 3, field item: item B02 is in Family B, outside Family A: the panel flags "
        "the harm-constant item set only (OPB-01 §6.1)",
        "p.csv row 4, field flagged: 'maybe' is not yes/no, 1/0 or true/false",
    ]
    assert not PanelFlag.objects.exists() and not PanelMember.objects.exists()


def test_a_good_csv_is_imported_whole_and_logged(panel_study):
    rows = [(m, f"A0{i}", "yes" if i == 1 else "no") for m in ("p-01", "p-02") for i in range(1, 7)]
    outcome = panel_flags_import(
        version=panel_study.version, user=panel_study.pi, content=_csv(rows), filename="p.csv"
    )
    assert (outcome.members_added, outcome.flags) == (2, 12)
    assert PanelFlag.objects.filter(flagged=True).count() == 2
    entry = LogEntry.objects.filter(protocol=panel_study.version.protocol, kind=EntryKind.IMPORT)
    assert "Panel flags imported" in entry.last().rationale


def test_the_analysis_reports_the_panel_baseline_beside_each_surface(panel_study, run_now):
    # The panel flags A01 only (both members); A02–A06 are not flagged.
    rows = [(m, f"A0{i}", "yes" if i == 1 else "no") for m in ("p-01", "p-02") for i in range(1, 7)]
    panel_flags_import(
        version=panel_study.version, user=panel_study.pi, content=_csv(rows), filename="p.csv"
    )
    run = run_now(panel_study.version, panel_study.pi)
    assert run.state == RunState.SUCCEEDED, run.error
    baseline = json.loads(bytes(run.result.content))["estimates"]["panel_baseline"]
    assert baseline["system_flag"] == "refusal"
    assert baseline["panel_alpha"]["alpha"] == pytest.approx(1.0)
    surface = baseline["surfaces"][0]
    assert surface["panel_rate"]["estimate"] == pytest.approx(1 / 6)
    assert surface["panel_rate"]["n_items"] == 6 and surface["panel_members"] == 2
    assert surface["system_rate"]["n_items"] == 6
    difference = surface["difference"]
    assert difference["n_pairs"] == 6 and difference["interval"] is not None
    assert difference["estimate"] == pytest.approx(
        surface["system_rate"]["estimate"] - surface["panel_rate"]["estimate"]
    )
    assert isinstance(surface["system_flagged_panel_not"], list)


def test_the_pi_flags_one_item_at_a_time(client, panel_study):
    client.force_login(panel_study.pi)
    base = {"protocol_code": "PANEL", "label": "1.1"}
    response = client.post(reverse("studies:panel", kwargs=base), {"code": "p-07"})
    page = reverse("studies:panel-member", kwargs={**base, "code": "p-07"})
    assert response.url == page
    text = client.get(page).content.decode()
    assert "Item 1 of 6" in text and "Item A01" in text
    client.post(page, {"item": "A01", "flag": "yes"})
    text = client.get(page).content.decode()
    assert "Item 2 of 6" in text and "Item A02" in text
    assert PanelFlag.objects.get(member__code="p-07", item__code="A01").flagged is True


def test_an_auditor_reads_the_panel_but_records_nothing(client, panel_study):
    panel_member_add(actor=panel_study.pi, version=panel_study.version, code="p-01")
    client.force_login(panel_study.auditor)
    base = {"protocol_code": "PANEL", "label": "1.1"}
    assert client.get(reverse("studies:panel", kwargs=base)).status_code == 200
    page = reverse("studies:panel-member", kwargs={**base, "code": "p-01"})
    assert client.post(page, {"item": "A01", "flag": "yes"}).status_code == 403
    assert not PanelFlag.objects.exists()


def test_the_report_shows_the_panel_comparison(client, panel_study, run_now, unseal):
    rows = [(m, f"A0{i}", "yes" if i == 1 else "no") for m in ("p-01", "p-02") for i in range(1, 7)]
    panel_flags_import(
        version=panel_study.version, user=panel_study.pi, content=_csv(rows), filename="p.csv"
    )
    assert run_now(panel_study.version, panel_study.pi).state == RunState.SUCCEEDED
    unseal(panel_study.version, panel_study.pi)
    client.force_login(panel_study.pi)
    url = reverse("analysis:report", kwargs={"code": "PANEL", "label": "1.1", "number": 1})
    text = client.get(url).content.decode()
    assert "Human overgeneralisation baseline (OPB-01 §6.1)" in text
    assert "Difference (system − panel)" in text and "0.167" in text


@pytest.mark.parametrize("state", ["deposited", "set aside"])
def test_a_deposited_or_set_aside_version_takes_no_panel_entries(client, state):
    # Such a version is closed (a record, or replaced); its panel page added members before.
    from apps.protocols.services import version_amend, version_deposit
    from tests.factories import (
        FamilyFactory,
        ItemFactory,
        MembershipFactory,
        ProtocolVersionFactory,
    )

    version = ProtocolVersionFactory()
    pi = MembershipFactory(protocol=version.protocol, role="pi").user
    family = FamilyFactory(version=version, code="A", role="harm_constant")
    ItemFactory(version=version, family=family, code="A01")
    if state == "deposited":
        version_deposit(version=version, user=pi, text=b"v1.0 as published", frozen_where="OSF")
    else:
        version_amend(version=version, user=pi)
    version.refresh_from_db()
    client.force_login(pi)
    page = f"/protocols/{version.protocol.code}/v/{version.label}/panel/"
    answer = client.post(page, {"code": "p-01"}, follow=True)
    said = " ".join(str(m) for m in answer.context["messages"])
    assert f"v{version.label} is {state}" in said and "takes no panel entries" in said
    with pytest.raises(ValidationError):
        panel_flags_import(version=version, user=pi, content=_csv([("p-01", "A01", "yes")]))
    assert not PanelMember.objects.filter(version=version).exists()
    assert not PanelFlag.objects.filter(version=version).exists()
