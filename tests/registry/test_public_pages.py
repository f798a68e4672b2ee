"""The public pages and API, signed out: what is published reads; what is not answers 404
exactly as what does not exist (BRIEF invariant 6)."""

import json
import re

import pytest
from django.urls import reverse

from apps.registry.citation import datacite_errors

pytestmark = pytest.mark.django_db


def _body(response) -> bytes:
    """The body, with the CSRF token (masked afresh for every response, so it differs between
    any two answers) left out."""
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return re.sub(rb'"X-CSRFToken": "[^"]*"', b"", body)


# -- reading what is public -------------------------------------------------------------------


def test_the_index_lists_public_protocols_and_nothing_else(client, world):
    page = client.get(reverse("registry:index"))
    assert page.status_code == 200
    html = page.content.decode()
    assert "REG-01" in html and "REG-03" in html  # a tombstone stays listed
    assert "REG-02" not in html  # under embargo
    assert "REG-04" not in html  # never published


def test_the_index_searches_by_code_title_template_and_date(client, world):
    url = reverse("registry:index")
    assert "REG-03" not in client.get(url, {"q": "registry study"}).content.decode()
    assert "REG-01" in client.get(url, {"q": "reg-01"}).content.decode()
    template = world.v10.protocol.template
    assert "REG-01" in client.get(url, {"template": template}).content.decode()
    day = world.v11.publication.public_since.date().isoformat()
    assert (
        "REG-01" in client.get(url, {"published_from": day, "published_to": day}).content.decode()
    )
    assert (
        "REG-01"
        not in client.get(
            url, {"published_from": "2000-01-01", "published_to": "2000-01-02"}
        ).content.decode()
    )


@pytest.mark.parametrize(
    "params",
    [
        {"published_from": "yesterday"},
        {"template": "no-such"},
        {"published_from": "2026-02-02", "published_to": "2026-01-01"},
    ],
)
def test_a_bad_search_is_a_400_naming_the_field(client, world, params):
    page = client.get(reverse("registry:index"), params)
    assert page.status_code == 400
    assert next(iter(params)) in page.content.decode() or "published_to" in page.content.decode()


def test_a_page_number_out_of_range_is_the_last_page_not_an_error(client, world):
    assert client.get(reverse("registry:index"), {"page": "999"}).status_code == 200
    assert client.get(reverse("registry:index"), {"page": "x"}).status_code == 200


def test_the_atom_feed_lists_public_versions(client, world):
    feed = client.get(reverse("registry:feed"))
    assert feed.status_code == 200
    assert feed["Content-Type"].startswith("application/atom+xml")
    text = feed.content.decode()
    assert "REG-01 v1.1" in text and "REG-01 v1.0" in text
    assert "REG-02" not in text and "REG-04" not in text and "v1.2" not in text


def test_the_protocol_page_lists_each_public_version_with_superseded_by_links(client, world):
    page = client.get(reverse("registry:protocol", args=["REG-01"]))
    html = page.content.decode()
    assert page.status_code == 200
    assert "Ada Lovelace (Analytical Institute)" in html
    assert world.v10.sha256 in html and world.v11.sha256 in html
    v11 = reverse("registry:version", args=["REG-01", "1.1"])
    assert f'Superseded by <a href="{v11}">v1.1</a>' in html
    # v1.1 is superseded by v1.2, which is not public: the page does not say so.
    assert world.v12.sha256 not in html and "v1.2" not in html


def test_the_version_page_shows_the_frozen_document_and_its_record(client, world):
    page = client.get(reverse("registry:version", args=["REG-01", "1.1"]))
    html = page.content.decode()
    assert page.status_code == 200
    for shown in (
        world.v11.sha256,
        f"/api/v1/blob/{world.v11.sha256[:16]}",
        world.v11.frozen_at.strftime("%Y-%m-%d %H:%M:%S"),
        "outcomes not yet seen",
        "The key gained a unit.",
        "Outcome data had not been seen.",
        "How to check this",
        "What is withheld, and why",
        "verify_registration.py",
        "The background.",  # a section of the frozen document
        "Analysis plan",
    ):
        assert shown in html, shown
    # The amendment that froze v1.2 (not public) is not shown.
    assert "A later change, not yet public." not in html


def test_the_page_carries_schema_org_json_ld(client, world):
    html = client.get(reverse("registry:version", args=["REG-01", "1.1"])).content.decode()
    block = re.search(r'<script type="application/ld\+json">(.*?)</script>', html, re.S)
    data = json.loads(block.group(1))
    assert data["@context"] == "https://schema.org"
    assert data["url"].endswith("/r/REG-01/1.1/")
    assert {"@type": "PropertyValue", "propertyID": "SHA-256", "value": world.v11.sha256} in data[
        "identifier"
    ]


def test_a_withdrawn_version_is_a_tombstone_without_its_content(client, world):
    page = client.get(reverse("registry:version", args=["REG-03", "1.0"]))
    html = page.content.decode()
    assert page.status_code == 200
    for shown in (
        "REG-03",
        "Withdrawn study",
        "v1.0",
        world.tombstone.sha256,
        "The scoring key was wrong.",
        world.tombstone.frozen_at.strftime("%Y-%m-%d"),
    ):
        assert shown in html, shown
    assert world.tombstone.withdrawal.withdrawn_at.strftime("%Y-%m-%d %H:%M:%S") in html
    assert "The background." not in html
    assert client.get(reverse("registry:document", args=["REG-03", "1.0"])).status_code == 404
    blob = client.get(reverse("protocols-api:blob", args=[world.tombstone.sha256]))
    assert blob.status_code == 404


def test_a_public_document_is_served_to_anyone_byte_for_byte(client, world):
    page = client.get(reverse("registry:document", args=["REG-01", "1.1"]))
    assert page.status_code == 200
    import hashlib

    assert hashlib.sha256(page.content).hexdigest() == world.v11.sha256
    blob = client.get(reverse("protocols-api:blob", args=[world.v11.sha256[:16]]))
    assert blob.status_code == 200 and blob.content == page.content


# -- 404 exactly as unknown -------------------------------------------------------------------


def _same_404(client, hidden: str, unknown: str) -> None:
    a, b = client.get(hidden), client.get(unknown)
    assert (a.status_code, b.status_code) == (404, 404), (hidden, unknown)
    assert _body(a) == _body(b), (hidden, unknown)


@pytest.mark.parametrize(
    ("hidden", "unknown"),
    [
        ("/r/REG-04/", "/r/NO-SUCH/"),
        ("/r/REG-02/", "/r/NO-SUCH/"),
        ("/r/REG-04/1.0/", "/r/NO-SUCH/1.0/"),
        ("/r/REG-02/1.0/", "/r/REG-01/9.9/"),
        ("/r/REG-01/1.2/", "/r/REG-01/9.9/"),
        ("/r/REG-01/1.2/document.json", "/r/REG-01/9.9/document.json"),
        ("/r/REG-01/1.2/cite.bib", "/r/REG-01/9.9/cite.bib"),
        ("/r/REG-04/log.jsonl", "/r/NO-SUCH/log.jsonl"),
        ("/r/REG-04/checkpoints.json", "/r/NO-SUCH/checkpoints.json"),
        ("/r/REG-04/1.0/runs/1/", "/r/NO-SUCH/1.0/runs/1/"),
        ("/api/v1/registry/protocols/REG-04", "/api/v1/registry/protocols/NO-SUCH"),
        (
            "/api/v1/registry/protocols/REG-02/versions/1.0",
            "/api/v1/registry/protocols/NO/versions/1.0",
        ),
        (
            "/api/v1/registry/protocols/REG-01/versions/1.2",
            "/api/v1/registry/protocols/REG-01/versions/9.9",
        ),
        ("/api/v1/registry/protocols/REG-04/log", "/api/v1/registry/protocols/NO-SUCH/log"),
    ],
)
def test_unpublished_answers_exactly_as_unknown(client, world, hidden, unknown):
    _same_404(client, hidden, unknown)


def test_an_unpublished_blob_answers_exactly_as_an_unknown_hash_or_prefix(client, world):
    for version in (world.private, world.embargoed, world.v12):
        _same_404(client, f"/api/v1/blob/{version.sha256}", "/api/v1/blob/" + "f" * 64)
        _same_404(client, f"/api/v1/blob/{version.sha256[:16]}", "/api/v1/blob/" + "f" * 16)


# -- citation ---------------------------------------------------------------------------------


def test_every_public_version_has_valid_datacite_metadata(client, world):
    for code, label in (("REG-01", "1.0"), ("REG-01", "1.1"), ("REG-03", "1.0")):
        answer = client.get(f"/api/v1/registry/protocols/{code}/versions/{label}/datacite")
        assert answer.status_code == 200
        metadata = answer.json()
        assert datacite_errors(metadata) == []
        assert metadata["url"].endswith(f"/r/{code}/{label}/")
        assert {
            "alternateIdentifier": answer["ETag"].strip('"'),
            "alternateIdentifierType": "SHA-256",
        } in metadata["alternateIdentifiers"]
        assert "max-age=31536000" in answer["Cache-Control"]
        again = client.get(answer.request["PATH_INFO"], HTTP_IF_NONE_MATCH=answer["ETag"])
        assert again.status_code == 304


def test_the_later_version_says_it_is_a_new_version_of_the_earlier(client, world):
    metadata = client.get("/r/REG-01/1.1/datacite.json").json()
    (related,) = metadata["relatedIdentifiers"]
    assert related["relationType"] == "IsNewVersionOf"
    assert related["relatedIdentifier"].endswith("/r/REG-01/1.0/")


def test_bibtex_and_csl_name_the_version_its_url_and_hash(client, world):
    bib = client.get("/r/REG-01/1.1/cite.bib").content.decode()
    assert bib.startswith("@misc{REG_01_v1_1,")
    assert "Ada Lovelace (Analytical Institute)" in bib and world.v11.sha256 in bib
    assert "http://testserver/r/REG-01/1.1/" in bib
    (csl,) = client.get("/r/REG-01/1.1/cite.csl.json").json()
    assert csl["URL"] == "http://testserver/r/REG-01/1.1/" and csl["version"] == "1.1"
    html = client.get("/r/REG-01/1.1/").content.decode()
    assert (
        "Ada Lovelace (Analytical Institute) (" in html and "[Preregistration, version 1.1]" in html
    )


# -- the public API ---------------------------------------------------------------------------


def test_the_public_api_lists_reads_and_is_in_the_schema(client, world):
    listing = client.get("/api/v1/registry/protocols")
    assert listing.status_code == 200
    assert {row["code"] for row in listing.json()} == {"REG-01", "REG-03"}
    protocol = client.get("/api/v1/registry/protocols/REG-01").json()
    assert [(v["label"], v["status"]) for v in protocol["versions"]] == [
        ("1.0", "superseded"),
        ("1.1", "frozen"),
    ]
    tomb = client.get("/api/v1/registry/protocols/REG-03/versions/1.0").json()
    assert tomb["status"] == "withdrawn" and tomb["document_url"] is None
    assert tomb["withdrawal_reason"] == "The scoring key was wrong."
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json")
    paths = (
        json.loads(schema.content)["paths"]
        if schema["Content-Type"].startswith("application/json")
        else schema.content.decode()
    )
    assert "/api/v1/registry/protocols/{code}/versions/{label}/datacite" in paths


def test_a_bad_api_search_is_a_400(client, world):
    answer = client.get("/api/v1/registry/protocols", {"published_from": "soon"})
    assert answer.status_code == 400
    assert "published_from" in answer.content.decode()
