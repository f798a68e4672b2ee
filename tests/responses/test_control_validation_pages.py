"""CRUCIBLE §7: control validations recorded by the PI from a page and the API (issue #14
Deliver 4), append-only and logged, an inconclusive control shown as never a pass; reviewers get
404 (blinding), editors and auditors read."""

import pytest

from apps.deviations.models import LogEntry
from apps.responses.models import ControlValidation

pytestmark = pytest.mark.django_db


def _page(version):
    return f"/protocols/{version.protocol.code}/v/{version.label}/control-validations/"


def _api(version):
    return f"/api/v1/protocols/{version.protocol.code}/versions/{version.label}/control-validations"


def test_the_pi_records_from_the_page_and_inconclusive_never_counts_as_a_pass(client, frozen, pi):
    client.force_login(pi)
    assert client.get(_page(frozen)).status_code == 200
    for result in ("pass", "inconclusive"):
        response = client.post(
            _page(frozen),
            {"environment": "range-7", "result": result, "rationale": f"control said {result}"},
        )
        assert response.status_code == 302
    page = client.get(_page(frozen)).content.decode()
    assert "inconclusive is never a pass" in page and "superseded" in page
    records = list(ControlValidation.objects.filter(version=frozen).order_by("pk"))
    assert [r.result for r in records] == ["pass", "inconclusive"]  # the pass is kept, not changed
    assert LogEntry.objects.filter(kind="control_validation").count() == 2
    listed = client.get(_api(frozen)).json()
    assert [(r["result"], r["is_latest"], r["counts_as_pass"]) for r in listed] == [
        ("inconclusive", True, False),
        ("pass", False, False),
    ]


def test_the_api_records_and_refuses_an_unknown_result_naming_the_field(client, frozen, pi):
    client.force_login(pi)
    made = client.post(
        _api(frozen) + "/record",
        {"environment": "range-main", "result": "pass", "rationale": "all controls passed"},
        content_type="application/json",
    )
    assert made.status_code == 201
    assert made.json()["counts_as_pass"] is True and made.json()["environment"] == "range-main"
    refused = client.post(
        _api(frozen) + "/record",
        {"environment": "range-main", "result": "probably", "rationale": "?"},
        content_type="application/json",
    )
    assert refused.status_code == 400 and "result" in refused.json()
    page = client.post(_page(frozen), {"environment": "", "result": "maybe", "rationale": ""})
    assert page.status_code == 200 and ControlValidation.objects.count() == 1


def test_reviewers_get_404_editors_and_auditors_read_but_do_not_record(
    client, frozen, reviewer, editor, auditor
):
    body = {"environment": "range-1", "result": "pass", "rationale": "x"}
    client.force_login(reviewer)
    assert client.get(_page(frozen)).status_code == 404
    assert client.post(_page(frozen), body).status_code == 404
    assert client.get(_api(frozen)).status_code == 404
    assert client.post(_api(frozen) + "/record", body).status_code == 404
    for person in (editor, auditor):
        client.force_login(person)
        page = client.get(_page(frozen))
        assert (
            page.status_code == 200 and "Record a control validation" not in page.content.decode()
        )
        assert client.post(_page(frozen), body).status_code == 403
        assert client.post(_api(frozen) + "/record", body).status_code == 403
    assert not ControlValidation.objects.exists()


def test_a_draft_cannot_take_a_validation_and_says_why(client, protocol, pi):
    from tests.factories import build_draft

    draft = build_draft(protocol=protocol, user=pi)
    client.force_login(pi)
    response = client.post(
        _page(draft), {"environment": "range-1", "result": "pass", "rationale": "x"}
    )
    assert response.status_code == 200
    assert "recorded on a frozen version" in response.content.decode()
    assert not ControlValidation.objects.exists()
