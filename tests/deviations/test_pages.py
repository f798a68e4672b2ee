"""The auditor's pages: who reads what, filters, chain state, exports, deviations, the seal page."""

import csv
import io
import json
from datetime import date, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from apps.deviations import refs
from apps.deviations.models import LogEntry
from apps.deviations.selectors import chain_verify, outcomes_visible
from apps.deviations.services import outcome_unseal
from tests.factories import MembershipFactory, ProtocolFactory

pytestmark = pytest.mark.django_db


def log_url(protocol) -> str:
    return f"/protocols/{protocol.code}/log/"


@pytest.mark.parametrize(
    ("person", "status"),
    [("pi", 200), ("editor", 200), ("auditor", 200), ("reviewer", 404), ("outsider", 404)],
)
@pytest.mark.parametrize("suffix", ["log/", "log.jsonl", "log.csv"])
def test_auditors_pis_and_editors_read_the_log_and_reviewers_do_not_know_it_exists(
    client, request, protocol, person, status, suffix, append
):
    append(protocol, 1)
    client.force_login(request.getfixturevalue(person))
    assert client.get(f"/protocols/{protocol.code}/{suffix}").status_code == status


def test_signed_out_visitors_are_sent_to_sign_in(client, protocol):
    response = client.get(log_url(protocol))
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_the_log_index_lists_and_links_the_protocols_one_may_read(
    client, auditor, protocol, append
):
    append(protocol, 2)
    hidden = ProtocolFactory(title="Someone else's study")
    reviewed = ProtocolFactory(title="A study I only review")
    MembershipFactory(user=auditor, protocol=reviewed, role="reviewer")
    client.force_login(auditor)
    html = client.get("/logs/").content.decode()
    assert f'<a href="{log_url(protocol)}">{protocol.code}</a>' in html
    assert "<td>2</td>" in html
    assert hidden.title not in html
    assert reviewed.title not in html


def test_the_page_states_how_far_the_chain_is_verified(client, auditor, protocol, append):
    entries = append(protocol, 3)
    client.force_login(auditor)
    html = client.get(log_url(protocol)).content.decode()
    report = chain_verify(protocol=protocol)
    assert "Chain verified" in html
    assert (
        f'through entry <a href="#entry-3">3</a> at <time>{report.verified_through_at}</time>'
        in html
    )
    assert entries[-1].hash in html
    for entry in entries:
        assert f'id="entry-{entry.seq}"' in html


def test_an_empty_log_says_so(client, auditor, protocol):
    client.force_login(auditor)
    html = client.get(log_url(protocol)).content.decode()
    assert "no entries yet" in html


def test_the_seal_list_says_a_draft_has_no_outcomes_to_seal(client, pi, protocol):
    from tests.factories import ProtocolVersionFactory

    ProtocolVersionFactory(protocol=protocol, label="9.0")
    client.force_login(pi)
    html = client.get(log_url(protocol)).content.decode()
    assert "v9.0</strong>" in html and "not frozen: it has no outcomes" in html
    assert "Unseal…" not in html


def test_the_log_filters_by_kind_actor_and_date(client, auditor, pi, editor, protocol, append):
    append(protocol, 2, kind="freeze")
    append(protocol, 1, kind="exclusion", actor=editor, rationale="Excluded episode 9")
    client.force_login(auditor)

    def shown(**params) -> set[int]:
        response = client.get(log_url(protocol), params)
        assert response.status_code == 200
        html = response.content.decode()
        return {e.seq for e in LogEntry.objects.all() if f'id="entry-{e.seq}"' in html}

    assert shown() == {1, 2, 3}
    assert shown(kind="exclusion") == {3}
    assert shown(actor=pi.username) == {1, 2}
    assert shown(actor=editor.username, kind="freeze") == set()
    today = timezone.now().date()
    assert shown(date_from=today.isoformat(), date_to=today.isoformat()) == {1, 2, 3}
    assert shown(date_to=(today - timedelta(days=1)).isoformat()) == set()
    assert shown(date_from=(today + timedelta(days=1)).isoformat()) == set()


def test_a_backwards_date_range_is_explained(client, auditor, protocol):
    client.force_login(auditor)
    html = client.get(log_url(protocol), {"date_from": "2026-02-02", "date_to": "2026-01-01"})
    assert "The end of the range is before its start." in html.content.decode()


def test_long_logs_are_paged(client, auditor, protocol, append):
    append(protocol, 105)
    client.force_login(auditor)
    first = client.get(log_url(protocol)).content.decode()
    assert 'id="entry-100"' in first and 'id="entry-101"' not in first
    second = client.get(log_url(protocol), {"page": 2}).content.decode()
    assert 'id="entry-105"' in second and 'id="entry-1"' not in second
    assert "Chain verified" in second and 'href="#entry-105">105</a>' in second


def test_each_entry_links_to_what_it_concerns_or_names_it_in_plain_text(
    client, auditor, protocol, append, monkeypatch
):
    monkeypatch.setattr(refs, "_resolvers", dict(refs._resolvers))  # registration undone after
    refs.register_ref_type(
        "test_widget", lambda ref, version: reverse("deviations:log", args=[ref["id"]])
    )
    append(
        protocol,
        1,
        refs=[
            {"type": "test_widget", "id": protocol.code, "label": "the widget"},
            {"type": "nobody_knows", "id": 5, "label": "an unknown thing"},
        ],
    )
    client.force_login(auditor)
    html = client.get(log_url(protocol)).content.decode()
    assert f'<a href="{log_url(protocol)}">the widget</a>' in html
    assert "an unknown thing" in html
    assert ">an unknown thing</a>" not in html


def test_the_jsonl_export_holds_the_whole_chain_with_its_hashes(client, auditor, protocol, append):
    entries = append(protocol, 3)
    client.force_login(auditor)
    response = client.get(f"/protocols/{protocol.code}/log.jsonl", {"kind": "freeze"})
    assert response["Content-Type"].startswith("application/x-ndjson")
    assert f'filename="{protocol.code}-deviation-log.jsonl"' in response["Content-Disposition"]
    lines = b"".join(response.streaming_content).decode().splitlines()
    exported = [json.loads(line) for line in lines]
    assert [e["seq"] for e in exported] == [1, 2, 3]  # never filtered: a part would not verify
    assert [e["hash"] for e in exported] == [e.hash for e in entries]
    assert exported[0]["prev_hash"] == "0" * 64
    assert exported[0]["rationale"] == entries[0].rationale


def test_the_csv_export_has_the_hashes_and_defuses_spreadsheet_formulas(
    client, auditor, pi, protocol, append
):
    append(protocol, 1)
    append(protocol, 1, rationale='=HYPERLINK("http://example.invalid","click")')
    client.force_login(auditor)
    response = client.get(f"/protocols/{protocol.code}/log.csv")
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [r["seq"] for r in rows] == ["1", "2"]
    assert rows[1]["hash"] == LogEntry.objects.get(seq=2).hash
    assert rows[1]["prev_hash"] == rows[0]["hash"]
    assert rows[0]["actor"] == pi.username
    assert rows[1]["rationale"] == "'" + LogEntry.objects.get(seq=2).rationale
    assert json.loads(rows[0]["refs"]) == LogEntry.objects.get(seq=1).refs


def test_the_offline_verifier_can_be_downloaded(client, auditor):
    client.force_login(auditor)
    response = client.get("/logs/verify_log.py")
    assert response.status_code == 200
    assert "verify_log.py" in response["Content-Disposition"]


# Recording a deviation by hand


def new_deviation_url(protocol) -> str:
    return f"/protocols/{protocol.code}/deviations/new/"


def test_the_deviation_form_labels_its_inputs_and_does_not_ask_about_outcomes(
    client, editor, protocol
):
    client.force_login(editor)
    html = client.get(new_deviation_url(protocol)).content.decode()
    for name in ("kind", "occurred_on", "rationale", "version"):
        assert f'<label for="id_{name}">' in html
    assert 'name="outcome_visible"' not in html
    assert "every version's outcomes are still sealed" in html


def test_recording_a_deviation_appends_it_with_the_seals_answer(
    client, pi, editor, protocol, frozen_version
):
    outcome_unseal(version=frozen_version, user=pi, confirmation=protocol.code)
    client.force_login(editor)
    response = client.post(
        new_deviation_url(protocol),
        {
            "kind": "deviation",
            "occurred_on": "2026-11-02",
            "rationale": "Judge model changed mid-run.",
            "version": frozen_version.pk,
            "outcome_visible": "false",  # ignored: not a field
        },
    )
    entry = LogEntry.objects.get(kind="deviation")
    assert response.status_code == 302
    assert response["Location"] == f"{log_url(protocol)}#entry-{entry.seq}"
    assert (entry.actor, entry.occurred_on) == (editor, date(2026, 11, 2))
    assert entry.outcome_visible is True
    assert entry.refs == [
        {
            "type": "version",
            "id": frozen_version.pk,
            "label": f"{protocol.code} v1.0",
            "sha256": frozen_version.sha256,
        }
    ]


def test_a_deviation_without_a_rationale_is_sent_back_with_the_reason(client, pi, protocol):
    client.force_login(pi)
    response = client.post(
        new_deviation_url(protocol),
        {"kind": "deviation", "occurred_on": "2026-11-02", "rationale": "   "},
    )
    assert response.status_code == 200
    assert "This field is required." in response.content.decode()
    assert not LogEntry.objects.exists()


def test_a_future_date_is_sent_back_with_the_reason(client, pi, protocol):
    client.force_login(pi)
    future = (timezone.now().date() + timedelta(days=3)).isoformat()
    response = client.post(
        new_deviation_url(protocol),
        {"kind": "deviation", "occurred_on": future, "rationale": "Early"},
    )
    assert f"{future} is in the future" in response.content.decode()
    assert not LogEntry.objects.exists()


@pytest.mark.parametrize(("person", "status"), [("auditor", 403), ("reviewer", 404)])
def test_auditors_and_reviewers_cannot_record_deviations(client, request, protocol, person, status):
    client.force_login(request.getfixturevalue(person))
    assert client.get(new_deviation_url(protocol)).status_code == status
    response = client.post(
        new_deviation_url(protocol),
        {"kind": "deviation", "occurred_on": "2026-11-02", "rationale": "x"},
    )
    assert response.status_code == status
    assert not LogEntry.objects.exists()


# The seal page


def unseal_url(version) -> str:
    return f"/protocols/{version.protocol.code}/v/{version.label}/unseal/"


def test_the_pi_unseals_with_the_typed_confirmation(client, pi, protocol, frozen_version):
    client.force_login(pi)
    page = client.get(unseal_url(frozen_version)).content.decode()
    assert '<label for="id_confirmation">' in page
    assert "cannot be undone" in page
    response = client.post(unseal_url(frozen_version), {"confirmation": protocol.code})
    assert response.status_code == 302
    assert outcomes_visible(frozen_version)
    log = client.get(log_url(protocol)).content.decode()
    assert "Outcome unsealed" in log
    assert f"unsealed</strong> by {pi.username}" in log


def test_a_wrong_confirmation_is_sent_back_and_the_seal_holds(client, pi, protocol, frozen_version):
    client.force_login(pi)
    response = client.post(unseal_url(frozen_version), {"confirmation": "yes"})
    assert response.status_code == 200
    assert f"Type the protocol code {protocol.code} exactly" in response.content.decode()
    assert not outcomes_visible(frozen_version)


@pytest.mark.parametrize(
    ("person", "status"), [("editor", 403), ("auditor", 403), ("reviewer", 404), ("outsider", 404)]
)
def test_only_the_pi_reaches_the_seal_page(
    client, request, protocol, frozen_version, person, status
):
    client.force_login(request.getfixturevalue(person))
    assert client.get(unseal_url(frozen_version)).status_code == status
    response = client.post(unseal_url(frozen_version), {"confirmation": protocol.code})
    assert response.status_code == status
    assert not outcomes_visible(frozen_version)


def test_the_log_offers_unsealing_to_the_pi_only_for_frozen_sealed_versions(
    client, pi, auditor, protocol, frozen_version
):
    client.force_login(pi)
    assert unseal_url(frozen_version) in client.get(log_url(protocol)).content.decode()
    client.force_login(auditor)
    assert unseal_url(frozen_version) not in client.get(log_url(protocol)).content.decode()


def test_an_occurred_on_date_is_shown(client, auditor, protocol, append):
    append(protocol, 1, occurred_on=date(2026, 11, 2))
    client.force_login(auditor)
    assert "2026-11-02" in client.get(log_url(protocol)).content.decode()


def test_the_log_pages_query_count_does_not_grow_with_its_entries(
    client, auditor, protocol, append
):
    client.force_login(auditor)
    append(protocol, 3)
    with CaptureQueriesContext(connection) as few:
        client.get(log_url(protocol))
    append(protocol, 30, refs=[{"type": "version", "id": 1, "label": "v1"}] * 3)
    with CaptureQueriesContext(connection) as many:
        client.get(log_url(protocol))
    assert len(many) == len(few)


def test_the_log_pages_query_count_does_not_grow_with_the_protocols_versions(
    client, auditor, protocol
):
    from tests.factories import ProtocolVersionFactory

    client.force_login(auditor)
    ProtocolVersionFactory(protocol=protocol, label="8.0")
    with CaptureQueriesContext(connection) as few:
        client.get(log_url(protocol))
    for n in range(5):
        ProtocolVersionFactory(protocol=protocol, label=f"9.{n}")
    with CaptureQueriesContext(connection) as many:
        client.get(log_url(protocol))
    assert len(many) == len(few)


def test_a_version_ref_links_to_the_versions_page(
    client, auditor, protocol, frozen_version, append
):
    from django.urls import reverse

    from apps.protocols.refs import version_ref

    append(protocol, 1, refs=[version_ref(frozen_version)])
    client.force_login(auditor)
    html = client.get(log_url(protocol)).content.decode()
    url = reverse("protocols:version", kwargs={"code": protocol.code, "label": "1.0"})
    assert f'<a href="{url}">{protocol.code} v1.0</a>' in html


def test_the_log_says_how_many_entries_wait_for_their_place_in_the_chain(
    client, auditor, protocol, pi, append
):
    from apps.deviations.models import PendingEntry

    append(protocol, 2)
    client.force_login(auditor)
    assert "waiting for" not in client.get(log_url(protocol)).content.decode()
    for n in range(3):  # staged under contention, not yet chained
        PendingEntry.objects.create(
            protocol=protocol, kind="deviation", rationale=f"staged {n}", actor_name="system"
        )
    html = client.get(log_url(protocol)).content.decode()
    assert "2 entries." in html
    assert "3 more entries are waiting for their places in the chain" in html
    assert "staged 0" not in html  # not an entry until it is chained
