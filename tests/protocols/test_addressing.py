"""One way to address a version: code + label routes, the old id routes redirecting (pages) or
answering as deprecated aliases (API), and links in every API version."""

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


def test_the_api_answers_alike_by_label_and_by_id_and_every_version_has_links(client, pi, frozen):
    client.force_login(pi)
    by_label = client.get(f"/api/v1/protocols/{frozen.protocol.code}/versions/1.0/rubric")
    by_id = client.get(f"/api/v1/versions/{frozen.pk}/rubric")
    assert by_label.status_code == by_id.status_code and by_label.json() == by_id.json()
    missing = client.get(f"/api/v1/protocols/{frozen.protocol.code}/versions/9.9/rubric")
    assert missing.status_code == 404 and missing["Content-Type"] == "application/json"
    (version,) = client.get(f"/api/v1/protocols/{frozen.protocol.code}/versions").json()
    links = version["links"]
    assert {"self", "page", "rubric", "scoring_open", "seal", "unseal", "freeze"} <= set(links)
    assert not [p for p in links.values() if re.search(r"/versions/\d+(/|$)", p)]
    for name in ("rubric", "scoring", "seal", "gate"):
        assert client.get(links[name]).status_code == 200, name
