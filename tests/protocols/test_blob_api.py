"""Blobs: served byte for byte by full hash and by unique prefix, immutably cached, to those who
may read the protocol — and 404 to reviewers and strangers, as for a hash that does not exist."""

import pytest
from rest_framework.authtoken.models import Token

from apps.protocols.models import Blob

pytestmark = pytest.mark.django_db


def _url(digest):
    return f"/api/v1/blob/{digest}"


def test_blob_is_served_byte_identical_by_full_hash_and_by_prefix(client, frozen, creator):
    client.force_login(creator)
    stored = bytes(Blob.objects.get(sha256=frozen.sha256).content)
    for digest in (frozen.sha256, frozen.sha256[:16], frozen.sha256[:40]):
        response = client.get(_url(digest))
        assert response.status_code == 200, digest
        assert response.content == stored
        assert response["Content-Type"] == "application/json; charset=utf-8"
        assert response["ETag"] == f'"{frozen.sha256}"'
        assert response["Cache-Control"] == "private, max-age=31536000, immutable"
        assert response["Content-Length"] == str(len(stored))


def test_a_matching_if_none_match_gets_304_without_a_body(client, frozen, creator):
    client.force_login(creator)
    response = client.get(_url(frozen.sha256[:16]), HTTP_IF_NONE_MATCH=f'"{frozen.sha256}"')
    assert response.status_code == 304
    assert response.content == b""
    assert response["ETag"] == f'"{frozen.sha256}"'
    other = client.get(_url(frozen.sha256), HTTP_IF_NONE_MATCH='"' + "0" * 64 + '"')
    assert other.status_code == 200


def test_a_token_works_as_well_as_a_session(client, frozen, creator):
    token = Token.objects.create(user=creator)
    response = client.get(_url(frozen.sha256), HTTP_AUTHORIZATION=f"Token {token.key}")
    assert response.status_code == 200


@pytest.mark.parametrize("person", ["pi", "editor", "auditor"])
def test_sighted_members_read_the_blob(client, request, frozen, person):
    client.force_login(request.getfixturevalue(person))
    assert client.get(_url(frozen.sha256)).status_code == 200


@pytest.mark.parametrize("person", ["reviewer", "outsider"])
def test_reviewers_and_strangers_get_404_as_for_an_unknown_hash(client, request, frozen, person):
    client.force_login(request.getfixturevalue(person))
    for digest in (frozen.sha256, frozen.sha256[:16]):
        response = client.get(_url(digest))
        assert response.status_code == 404
        assert frozen.sha256 not in response.content.decode()


def test_anonymous_callers_are_refused(client, frozen):
    # 404 as for an unknown hash: anonymous callers reach the view (a published rubric is
    # public, seed 003) and learn nothing about whether a private blob exists.
    assert client.get(_url(frozen.sha256)).status_code == 404


def test_unknown_short_and_malformed_hashes_are_404(client, frozen, creator):
    client.force_login(creator)
    assert client.get(_url("0" * 64)).status_code == 404
    assert client.get(_url(frozen.sha256[:15])).status_code == 404  # too short to be unique
    assert client.get(_url("z" * 16)).status_code == 404
    assert client.get(_url(frozen.sha256 + "0")).status_code == 404


def test_an_upper_case_hash_is_the_same_blob(client, frozen, creator):
    client.force_login(creator)
    assert client.get(_url(frozen.sha256.upper())).status_code == 200


def _twin(frozen) -> str:
    twin = frozen.sha256[:16] + "f" * 48
    return frozen.sha256[:16] + "e" * 48 if twin == frozen.sha256 else twin


def test_an_ambiguous_prefix_is_409_and_names_no_blob(client, frozen, creator):
    from apps.protocols import blobs

    client.force_login(creator)
    twin = _twin(frozen)
    Blob.objects.create(sha256=twin, content=b"{}", size=2)
    # A twin the caller may not read is not theirs to know of: the prefix names their blob.
    assert client.get(_url(frozen.sha256[:16])).status_code == 200
    blobs.register_blob_reader("test.twin", lambda user, sha256: sha256 == twin)
    try:
        response = client.get(_url(frozen.sha256[:16]))
    finally:
        blobs._readers.pop("test.twin")
    assert response.status_code == 409
    body = response.content.decode()
    assert twin not in body and frozen.sha256 not in body
    # the full hash, or a longer prefix, still reaches it
    assert client.get(_url(frozen.sha256)).status_code == 200


def test_a_blob_the_caller_may_not_read_does_not_make_a_prefix_ambiguous(client, frozen, creator):
    """An unreadable blob answers as an unknown one, also here: were the prefix ambiguous, a
    409 would tell that a blob nobody showed this caller exists (BRIEF invariant 6)."""
    client.force_login(creator)
    Blob.objects.create(sha256=_twin(frozen), content=b"{}", size=2)  # belongs to no version
    response = client.get(_url(frozen.sha256[:16]))
    assert response.status_code == 200
    assert response.content == bytes(Blob.objects.get(sha256=frozen.sha256).content)


def test_a_draft_has_no_blob_to_read(client, ready_draft, creator):
    client.force_login(creator)
    Blob.objects.create(sha256="a" * 64, content=b"{}", size=2)  # belongs to no version
    assert client.get(_url("a" * 64)).status_code == 404


def test_unknown_and_unreadable_blobs_cost_the_same_queries_and_load_no_content(
    client, frozen, outsider
):
    """Issue #33: the blob was loaded before the access check, so an unreadable hash took
    longer (+32 ms) than an unknown one. Now both run the same queries, none of them reading
    a blob's content."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(outsider)
    answers = {}
    for name, digest in (("unreadable", frozen.sha256), ("unknown", "f" * 64)):
        with CaptureQueriesContext(connection) as queries:
            response = client.get(_url(digest))
        assert response.status_code == 404
        answers[name] = [q["sql"] for q in queries.captured_queries]
        assert not any('"content"' in sql for sql in answers[name]), name
    shape = {name: [sql.split(" WHERE ")[0] for sql in sqls] for name, sqls in answers.items()}
    assert shape["unreadable"] == shape["unknown"]
