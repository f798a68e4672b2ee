"""Journey d: an auditor reads a protocol's deviation log, filters it by kind, sees the chain
verified, and downloads the JSONL and CSV exports.

The log is written by the real services (freeze, amendment, recorded deviations): see
``tests.factories.logged_protocol``.
"""

import csv
import io
import json

import pytest

from apps.deviations.models import LogEntry
from tests.factories import logged_protocol, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_auditor_log(journey):
    protocol = logged_protocol(
        code="OPB-J4", pi=make_user("pat-pi"), auditor=make_user("ada-auditor")
    )
    entries = list(LogEntry.objects.filter(protocol=protocol).order_by("seq"))
    kinds = [e.kind for e in entries]
    assert kinds.count("deviation") == 1 and len(set(kinds)) >= 3

    page = journey.page
    journey.sign_in("ada-auditor")
    journey.go("/logs/")
    journey.snap("log-index")
    journey.click_and_wait(page.get_by_role("link", name="OPB-J4"))

    state = page.locator(".chain-state")
    assert "chain-ok" in state.get_attribute("class")
    assert state.get_by_text("Chain verified").is_visible()
    assert state.locator("code.hash").inner_text() == entries[-1].hash
    assert page.locator(".log-entry").count() == len(entries)
    assert page.get_by_role("link", name="Record a deviation").count() == 0  # auditors only read
    journey.snap("log")
    journey.tour("tour-6-deviation-log")

    # Filter by kind: only the deviation is listed; the chain is still verified whole.
    page.get_by_label("Kind").select_option("deviation")
    journey.click_and_wait(page.get_by_role("button", name="Filter"))
    assert "kind=deviation" in page.url
    assert page.locator(".log-entry").count() == 1
    assert page.locator(".log-entry").get_by_text("provider outage").is_visible()
    filtered = "1 entry matches the filters (the chain is verified whole)"
    assert page.get_by_text(filtered).is_visible()
    assert state.get_by_text("Chain verified").is_visible()
    journey.snap("filtered")

    # The exports: every entry, with its hash.
    with page.expect_download() as jsonl:
        page.get_by_role("link", name="JSONL").click()
    lines = jsonl.value.path().read_text().splitlines()
    exported = [json.loads(line) for line in lines]
    assert [e["hash"] for e in exported] == [e.hash for e in entries]
    with page.expect_download() as csv_download:
        page.get_by_role("link", name="CSV", exact=True).click()
    rows = list(csv.DictReader(io.StringIO(csv_download.value.path().read_text())))
    assert [r["kind"] for r in rows] == kinds
    assert csv_download.value.suggested_filename.endswith(".csv")
