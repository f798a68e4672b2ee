"""One way to address a version: code + label routes, the old id routes redirecting (pages) or
redirecting for good (API: 308, deprecated in the schema), and links in every API version."""

import re

import pytest

pytestmark = pytest.mark.django_db


def test_an_old_page_address_redirects_to_code_and_label(client, pi, frozen):
    client.force_login(pi)
    new = f"/protocols/{frozen.protocol.code}/v/{frozen.label}/rubric/"
    response = client.get(f"/versions/{frozen.pk}/rubric/?x=1")
    assert response.status_code == 302 and response["Location"] == new + "?x=1"
    posted = client.post(f"/versions/{frozen.pk}/scoring/", {})
    assert posted.status_code == 307  # a form's POST keeps its method and body
    assert posted["Location"] == f"/protocols/{frozen.protocol.code}/v/{frozen.label}/scoring/"
    unseal = client.get(f"/versions/{frozen.pk}/unseal/")
    assert unseal["Location"] == f"/protocols/{frozen.protocol.code}/v/{frozen.label}/unseal/"


def test_an_old_page_address_tells_an_outsider_nothing(client, outsider, frozen):
    client.force_login(outsider)
    response = client.get(f"/versions/{frozen.pk}/rubric/")
    assert response.status_code == 404
    assert frozen.protocol.code not in response.get("Location", "")


def test_the_api_by_id_redirects_for_good_to_code_and_label_and_every_version_has_links(
    client, pi, frozen
):
    client.force_login(pi)
    new = f"/api/v1/protocols/{frozen.protocol.code}/versions/1.0/rubric"
    by_label = client.get(new)
    by_id = client.get(f"/api/v1/versions/{frozen.pk}/rubric?x=1")
    assert by_id.status_code == 308 and by_id["Location"] == new + "?x=1"
    # 308 keeps the method and the body (RFC 9110 §15.4.9): a POST lands as a POST.
    posted = client.post(f"/api/v1/versions/{frozen.pk}/scoring/open")
    assert posted.status_code == 308 and posted["Location"].endswith("/versions/1.0/scoring/open")
    followed = client.get(f"/api/v1/versions/{frozen.pk}/rubric", follow=True)
    assert followed.json() == by_label.json()
    missing = client.get(f"/api/v1/protocols/{frozen.protocol.code}/versions/9.9/rubric")
    assert missing.status_code == 404 and missing["Content-Type"] == "application/json"
    (version,) = client.get(f"/api/v1/protocols/{frozen.protocol.code}/versions").json()
    links = version["links"]
    assert {"self", "page", "rubric", "scoring_open", "seal", "unseal", "freeze"} <= set(links)
    assert not [p for p in links.values() if re.search(r"/versions/\d+(/|$)", p)]
    for name in ("rubric", "scoring", "seal", "gate"):
        assert client.get(links[name]).status_code == 200, name


def test_an_outsider_learns_nothing_from_an_api_address_by_id(client, outsider, frozen):
    client.force_login(outsider)
    response = client.get(f"/api/v1/versions/{frozen.pk}/rubric")
    assert response.status_code == 404 and "Location" not in response
    assert response["Content-Type"] == "application/json"


def test_every_api_operation_by_id_is_deprecated_in_the_schema(client, pi):
    client.force_login(pi)
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    by_id = {p: ops for p, ops in schema["paths"].items() if p.startswith("/api/v1/versions/")}
    operations = [op for ops in by_id.values() for op in ops.values()]
    assert len(operations) >= 16
    assert all(op.get("deprecated") is True and "308" in op["responses"] for op in operations)
    live = [p for p in schema["paths"] if p.startswith("/api/v1/protocols/")]
    assert not [op for p in live for op in schema["paths"][p].values() if op.get("deprecated")]
