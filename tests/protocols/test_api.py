"""The protocols API: who may do what (reviewers and strangers get 404 everywhere), draft edits
validated by kind, the gate, freeze, amend, withdraw, members, and a complete OpenAPI schema."""

import json

import pytest
from django.core.management import call_command

from apps.deviations.models import LogEntry

pytestmark = pytest.mark.django_db

V = "/api/v1/protocols/OPB-T/versions/1.0"
READS = [
    "/api/v1/protocols/OPB-T",
    "/api/v1/protocols/OPB-T/versions",
    V,
    V + "/gate",
    "/api/v1/protocols/OPB-T/diff?from=1.0&to=1.0",
]


def _patch(client, url, data):
    return client.patch(url, json.dumps(data), content_type="application/json")


def _post(client, url, data=None):
    return client.post(url, json.dumps(data or {}), content_type="application/json")


@pytest.mark.parametrize("person", ["reviewer", "outsider"])
def test_reviewers_and_strangers_get_404_on_every_protocol_endpoint(
    client, request, frozen, person
):
    client.force_login(request.getfixturevalue(person))
    for url in [*READS, "/api/v1/protocols/OPB-T/members"]:
        assert client.get(url).status_code == 404, url
    assert _patch(client, V, {"sections": {"design": "x"}}).status_code == 404
    for action in ("freeze", "amend", "withdraw"):
        assert _post(client, f"{V}/{action}", {"reason": "x"}).status_code == 404, action
    assert _post(client, "/api/v1/protocols/OPB-T/members", {}).status_code == 404
    assert "OPB-T" not in client.get("/api/v1/protocols").content.decode()


def test_a_reviewer_gets_404_even_for_a_version_that_does_not_exist(client, reviewer, frozen):
    client.force_login(reviewer)
    assert client.get("/api/v1/protocols/OPB-T/versions/9.9").status_code == 404


@pytest.mark.parametrize("person", ["pi", "editor", "auditor"])
def test_sighted_members_read_frozen_versions(client, request, frozen, person):
    client.force_login(request.getfixturevalue(person))
    for url in READS:
        assert client.get(url).status_code == 200, url


def test_an_auditor_reads_no_drafts(client, auditor, ready_draft):
    client.force_login(auditor)
    assert client.get(V).status_code == 403
    assert client.get("/api/v1/protocols/OPB-T").status_code == 200


def test_an_editor_edits_drafts_but_does_not_freeze_or_amend(client, editor, ready_draft):
    client.force_login(editor)
    assert _patch(client, V, {"sections": {"design": "Editor's words."}}).status_code == 200
    assert _post(client, f"{V}/freeze").status_code == 403
    assert _post(client, f"{V}/amend").status_code == 403
    assert client.get("/api/v1/protocols/OPB-T/members").status_code == 403


def test_an_auditor_cannot_edit(client, auditor, ready_draft):
    client.force_login(auditor)
    assert _patch(client, V, {"sections": {"design": "x"}}).status_code == 403


def test_create_a_protocol_and_read_its_draft(client, outsider):
    client.force_login(outsider)
    response = _post(
        client, "/api/v1/protocols", {"code": "XS-1", "title": "Refusal", "template": "xstest"}
    )
    assert response.status_code == 201
    assert response.json()["code"] == "XS-1"
    draft = client.get("/api/v1/protocols/XS-1/versions/1.0").json()
    assert draft["status"] == "draft"
    assert {p["name"] for p in draft["parameters"]} >= {"agreement_minimum", "seed"}
    assert _post(client, "/api/v1/protocols", {"code": "XS-1", "title": "T"}).status_code == 400


def test_patch_edits_sections_and_parameters_and_names_bad_values(client, pi, draft):
    client.force_login(pi)
    response = _patch(
        client,
        V,
        {"sections": {"hypotheses": "H1"}, "parameters": {"epsilon": "0.05"}},
    )
    assert response.status_code == 200
    body = response.json()
    assert body["sections"]["hypotheses"] == "H1"
    assert {p["name"]: p["value"] for p in body["parameters"]}["epsilon"] == "0.05"

    bad = _patch(client, V, {"parameters": {"n_per_cell": "4", "seed": "x"}})
    assert bad.status_code == 400
    assert bad.json() == {
        "parameters.n_per_cell": ["the n per cell must be at least 5, not 4"],
        "parameters.seed": ["the random seed must be a whole number such as 5, not 'x'"],
    }
    assert _patch(client, V, {"sections": {"hypothesis": "typo"}}).status_code == 400
    assert _patch(client, V, {"parameters": {"nope": "1"}}).status_code == 400


def test_the_gate_endpoint_lists_problems_with_links(client, pi, draft):
    client.force_login(pi)
    body = client.get(V + "/gate").json()
    assert body["ready"] is False
    assert {
        "code": "param_missing",
        "message": "the equivalence margin ε has no value",
        "url": "/protocols/OPB-T/v/1.0/edit/#param-epsilon",
    } in body["problems"]


def test_freeze_through_the_api(client, pi, draft, ready_draft):
    client.force_login(pi)
    _patch(client, V, {"parameters": {"epsilon": ""}})
    refused = _post(client, V + "/freeze")
    assert refused.status_code == 400
    assert [p["message"] for p in refused.json()["problems"]] == [
        "the equivalence margin ε has no value"
    ]
    _patch(client, V, {"parameters": {"epsilon": "0.1"}})
    frozen = _post(client, V + "/freeze")
    assert frozen.status_code == 200
    body = frozen.json()
    assert body["status"] == "frozen"
    assert body["frozen_by"] == pi.username
    assert body["blob_url"] == f"/api/v1/blob/{body['sha256']}"
    assert client.get(body["blob_url"]).status_code == 200


def test_amend_and_withdraw_through_the_api(client, pi, frozen):
    client.force_login(pi)
    amended = _post(client, V + "/amend")
    assert amended.status_code == 201
    assert (amended.json()["label"], amended.json()["supersedes"]) == ("1.1", "1.0")
    assert _post(client, V + "/amend").status_code == 409
    assert _post(client, V + "/withdraw", {"reason": ""}).status_code == 400
    withdrawn = _post(client, V + "/withdraw", {"reason": "Flawed pilot."})
    assert withdrawn.status_code == 200
    assert withdrawn.json()["status"] == "withdrawn"
    assert withdrawn.json()["withdrawal"]["reason"] == "Flawed pilot."
    assert LogEntry.objects.filter(kind="withdrawal").count() == 1
    assert _post(client, V + "/withdraw", {"reason": "again"}).status_code == 409


def test_members_are_granted_by_username(client, pi, protocol, outsider):
    client.force_login(pi)
    url = "/api/v1/protocols/OPB-T/members"
    granted = _post(client, url, {"username": outsider.username, "role": "reviewer"})
    assert granted.status_code == 201
    assert {"username": outsider.username, "role": "reviewer"} in client.get(url).json()
    unknown = _post(client, url, {"username": "nobody", "role": "editor"})
    assert unknown.status_code == 400
    assert "nobody" in unknown.json()["username"][0]


def test_versions_are_listed_in_lineage_order(client, pi, frozen):
    client.force_login(pi)
    _post(client, V + "/amend")
    labels = [v["label"] for v in client.get("/api/v1/protocols/OPB-T/versions").json()]
    assert labels == ["1.0", "1.1"]


def test_the_openapi_schema_is_complete_and_valid():
    # Raises on any warning: every endpoint here has typed input and output.
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", "/dev/null")
