"""The log's API: the feed, verification, manual deviations and the outcome seal."""

import pytest
from rest_framework.test import APIClient

from apps.deviations.models import LogEntry
from apps.deviations.selectors import outcomes_visible
from tests.factories import (
    FrozenVersionFactory,
    ProtocolFactory,
    ProtocolVersionFactory,
    api_url,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def api():
    return APIClient()


def feed(api, protocol, **params):
    response = api.get(f"/api/v1/protocols/{protocol.code}/log", params)
    assert response.status_code == 200, response.content
    return response.json()


def test_the_feed_is_newest_first_and_pages_back_with_before(api, auditor, protocol, append):
    append(protocol, 5)
    api.force_authenticate(auditor)
    page = feed(api, protocol, limit=2)
    assert [e["seq"] for e in page["entries"]] == [5, 4]
    assert page["next"].endswith("before=4") or "before=4" in page["next"]
    page = api.get(page["next"]).json()
    assert [e["seq"] for e in page["entries"]] == [3, 2]
    page = api.get(page["next"]).json()
    assert [e["seq"] for e in page["entries"]] == [1]
    assert page["next"] is None


def test_the_feed_follows_the_chain_with_after(api, auditor, protocol, append):
    entries = append(protocol, 4)
    api.force_authenticate(auditor)
    page = feed(api, protocol, after=1, limit=2)
    assert [e["seq"] for e in page["entries"]] == [2, 3]
    assert page["entries"][0]["prev_hash"] == entries[0].hash
    assert page["entries"][0]["hash"] == entries[1].hash
    page = api.get(page["next"]).json()
    assert [e["seq"] for e in page["entries"]] == [4]
    assert feed(api, protocol, after=4)["entries"] == []


def test_the_feed_filters_and_refuses_contradictory_paging(api, auditor, editor, protocol, append):
    append(protocol, 2)
    append(protocol, 1, kind="exclusion", actor=editor)
    api.force_authenticate(auditor)
    assert [e["seq"] for e in feed(api, protocol, kind="exclusion")["entries"]] == [3]
    assert [e["actor"] for e in feed(api, protocol, actor=editor.username)["entries"]] == [
        editor.username
    ]
    response = api.get(f"/api/v1/protocols/{protocol.code}/log", {"after": 1, "before": 3})
    assert response.status_code == 400
    response = api.get(f"/api/v1/protocols/{protocol.code}/log", {"limit": 5000})
    assert response.status_code == 400


@pytest.mark.parametrize(
    ("person", "status"),
    [("auditor", 200), ("pi", 200), ("editor", 200), ("reviewer", 404), ("outsider", 404)],
)
def test_who_reads_the_feed_and_the_verification(api, request, protocol, person, status):
    api.force_authenticate(request.getfixturevalue(person))
    assert api.get(f"/api/v1/protocols/{protocol.code}/log").status_code == status
    assert api.get(f"/api/v1/protocols/{protocol.code}/log/verify").status_code == status


def test_verification_reports_how_far_the_chain_holds(api, auditor, protocol, append):
    entries = append(protocol, 3)
    api.force_authenticate(auditor)
    data = api.get(f"/api/v1/protocols/{protocol.code}/log/verify").json()
    assert data["ok"] is True
    assert data["verified_through"] == 3
    assert data["head_hash"] == entries[-1].hash
    assert data["broken_at"] is None
    assert data["summary"].startswith("verified through entry 3 at ")


def deviations_url(protocol) -> str:
    return f"/api/v1/protocols/{protocol.code}/deviations"


def test_an_editor_records_a_deviation_through_the_api(api, editor, protocol, frozen_version):
    api.force_authenticate(editor)
    response = api.post(
        deviations_url(protocol),
        {
            "occurred_on": "2026-11-02",
            "rationale": "Rate limit: 3 episodes rerun.",
            "kind": "platform_loss",
            "version": frozen_version.pk,
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    # Entry 1 is the version's freeze.
    assert (body["seq"], body["kind"], body["occurred_on"]) == (2, "platform_loss", "2026-11-02")
    assert body["outcome_visible"] is False
    assert body["refs"][0]["id"] == frozen_version.pk
    assert LogEntry.objects.get(kind="platform_loss").hash == body["hash"]


def test_the_api_cannot_set_outcome_visible(api, editor, protocol):
    api.force_authenticate(editor)
    api.post(
        deviations_url(protocol),
        {"occurred_on": "2026-11-02", "rationale": "x", "outcome_visible": True},
        format="json",
    )
    assert LogEntry.objects.get().outcome_visible is False


def test_a_blank_rationale_is_a_400_naming_the_field(api, pi, protocol):
    api.force_authenticate(pi)
    response = api.post(
        deviations_url(protocol), {"occurred_on": "2026-11-02", "rationale": ""}, format="json"
    )
    assert response.status_code == 400
    assert response.json() == {"rationale": ["A rationale is required: say what happened and why."]}


def test_a_version_of_another_protocol_is_a_400(api, pi, protocol):
    foreign = ProtocolVersionFactory(protocol=ProtocolFactory())
    api.force_authenticate(pi)
    response = api.post(
        deviations_url(protocol),
        {"occurred_on": "2026-11-02", "rationale": "x", "version": foreign.pk},
        format="json",
    )
    assert response.status_code == 400
    assert "is not a version of" in response.json()["version"][0]
    assert not LogEntry.objects.exists()


@pytest.mark.parametrize(("person", "status"), [("auditor", 403), ("reviewer", 404)])
def test_auditors_and_reviewers_cannot_post_deviations(api, request, protocol, person, status):
    api.force_authenticate(request.getfixturevalue(person))
    response = api.post(
        deviations_url(protocol), {"occurred_on": "2026-11-02", "rationale": "x"}, format="json"
    )
    assert response.status_code == status


def test_the_pi_unseals_through_the_api(api, pi, auditor, protocol, frozen_version):
    api.force_authenticate(auditor)
    seal = api.get(api_url(frozen_version, "seal")).json()
    assert seal["sealed"] is True
    api.force_authenticate(pi)
    wrong = api.post(api_url(frozen_version, "unseal"), {"confirmation": "yes"}, format="json")
    assert wrong.status_code == 400
    assert "exactly" in wrong.json()["confirmation"][0]
    response = api.post(
        api_url(frozen_version, "unseal"),
        {"confirmation": protocol.code},
        format="json",
    )
    assert response.status_code == 201
    assert response.json()["sealed"] is False
    assert response.json()["unsealed_by"] == pi.username
    assert outcomes_visible(frozen_version)
    again = api.post(
        api_url(frozen_version, "unseal"),
        {"confirmation": protocol.code},
        format="json",
    )
    assert again.status_code == 400


def test_a_draft_cannot_be_unsealed_through_the_api(api, pi, protocol):
    draft = ProtocolVersionFactory(protocol=protocol)
    api.force_authenticate(pi)
    response = api.post(api_url(draft, "unseal"), {"confirmation": protocol.code}, format="json")
    assert response.status_code == 400
    assert "only a frozen version" in response.json()["version"][0]


@pytest.mark.parametrize(
    ("person", "status"), [("editor", 403), ("auditor", 403), ("reviewer", 404), ("outsider", 404)]
)
def test_only_the_pi_unseals_through_the_api(api, request, protocol, person, status):
    version = FrozenVersionFactory(protocol=protocol)
    api.force_authenticate(request.getfixturevalue(person))
    response = api.post(api_url(version, "unseal"), {"confirmation": protocol.code}, format="json")
    assert response.status_code == status
    assert not outcomes_visible(version)


def test_the_log_endpoints_are_in_the_openapi_schema(api, auditor):
    api.force_authenticate(auditor)
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    for path in (
        "/api/v1/protocols/{code}/log",
        "/api/v1/protocols/{code}/log/verify",
        "/api/v1/protocols/{code}/deviations",
        "/api/v1/versions/{id}/seal",
        "/api/v1/versions/{id}/unseal",
    ):
        assert path in schema["paths"], path
