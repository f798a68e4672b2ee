"""Each cause of a 500 that issue #33 found, now a 4xx, through the shared guards.

NUL or a lone surrogate in a quoted session cookie; a docs slug longer than a file name may be; a
lone surrogate in a machine-score file's key; JSON nested 100,000 deep (the deposit, and every
JSON route through the one parser); a design CSV 200,000 columns wide.
"""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client, RequestFactory

from apps.core.inputs import CSV_MAX_COLUMNS, JSON_MAX_DEPTH
from apps.core.middleware import RequestGuardMiddleware
from apps.raters.models import MachineScore
from tests.factories import (
    JUDGE,
    JUDGE_FIELDS,
    ProtocolVersionFactory,
    api_url,
    build_draft,
    machine_study,
)

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/login/", "/", "/protocols/", "/docs/analysis/"])
def test_a_nul_in_a_quoted_session_cookie_is_a_400_on_every_page(url):
    response = Client().get(url, HTTP_COOKIE='sessionid="\\000abcdefgh"')
    assert response.status_code == 400
    assert "sessionid" in response.content.decode() and "NUL" in response.content.decode()


@pytest.mark.django_db
def test_a_nul_in_the_csrf_cookie_is_a_400_and_a_plain_cookie_passes():
    assert Client().get("/login/", HTTP_COOKIE='csrftoken="a\\000b"').status_code == 400
    assert Client().get("/login/", HTTP_COOKIE="sessionid=abcdefgh").status_code == 200


def test_a_lone_surrogate_in_a_cookie_is_a_400():
    # A WSGI server hands headers over as latin-1, so a surrogate cannot come through a test
    # client's header; the middleware is given one directly, as a decoding elsewhere could.
    request = RequestFactory().get("/login/")
    request.COOKIES = {"sessionid": "abc\ud800"}
    response = RequestGuardMiddleware(lambda r: pytest.fail("reached the view"))(request)
    assert response.status_code == 400 and "surrogate" in response.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("length", [253, 300, 5000])
def test_a_docs_slug_longer_than_a_file_name_is_a_404(client, length):
    assert client.get(f"/docs/{'a' * length}/").status_code == 404
    assert client.get(f"/docs/img/{'a' * length}.png").status_code == 404
    assert client.get("/docs/analysis/").status_code == 200


@pytest.fixture
def judged(protocol, pi):
    return machine_study(
        protocol=protocol, pi=pi, fields=JUDGE_FIELDS, scorers={"judge": ("judge", JUDGE)}
    )


SURROGATE_KEY = (
    b'{"position": 1, "fidelity": true, "loss1": 0.4, "drift_flag": false, "\\ud800": 1}\n'
)


@pytest.mark.django_db
def test_a_lone_surrogate_in_a_machine_score_files_key_is_refused_naming_the_row(
    client, pi, judged
):
    client.force_login(pi)
    api = client.post(
        api_url(judged, "machine-scores/import"),
        {"file": SimpleUploadedFile("j.jsonl", SURROGATE_KEY), "scorer": "judge"},
    )
    assert api.status_code == 400, api.content
    assert any(e["row"] == 1 and "surrogate" in e["message"] for e in api.json()["errors"]), (
        api.json()
    )
    page = client.post(
        f"/protocols/{judged.protocol.code}/v/{judged.label}/scorers/import/",
        {"file": SimpleUploadedFile("j.jsonl", SURROGATE_KEY), "scorer": "judge"},
    )
    assert page.status_code == 200 and "surrogate" in page.content.decode()
    assert MachineScore.objects.count() == 0


@pytest.mark.django_db
def test_json_nested_100000_deep_is_a_400_on_the_deposit_and_on_other_json_routes(
    client, pi, protocol
):
    ProtocolVersionFactory(protocol=protocol, label="1.0")
    client.force_login(pi)
    for url, method in (
        (f"/api/v1/protocols/{protocol.code}/versions/1.0/deposit", client.post),
        (f"/api/v1/protocols/{protocol.code}/versions/1.0", client.patch),
    ):
        response = method(url, DEEP, content_type="application/json")
        assert response.status_code == 400, (url, response.content[:300])
        assert "nested" in response.json()["detail"]
    # Deep enough to parse, deeper than the limit: refused with its path.
    nested = {"text": "x", "frozen_where": "osf", "note": json.dumps(1)}
    body = json.dumps({**nested, "extra": [[[[1]]]]}).replace(
        "[[[[1]]]]", "[" * (JSON_MAX_DEPTH + 1) + "]" * (JSON_MAX_DEPTH + 1)
    )
    response = client.post(
        f"/api/v1/protocols/{protocol.code}/versions/1.0/deposit",
        body,
        content_type="application/json",
    )
    assert response.status_code == 400 and "extra" in response.json()["detail"]


@pytest.mark.django_db
def test_a_json_parameter_nested_5000_deep_is_a_400_naming_the_parameter(client, pi, protocol):
    # Issue 32 point 9: the value is JSON text inside the JSON body, read by the parameter's kind.
    from apps.protocols.models import AnalysisParameter, ParameterKind

    version = ProtocolVersionFactory(protocol=protocol, label="1.0")
    AnalysisParameter.objects.create(
        version=version,
        name="deep_table",
        label="Deep table",
        kind=ParameterKind.JSON,
        schema={},
        required=False,
    )
    client.force_login(pi)
    deep_value = "[" * 5000 + "]" * 5000
    response = client.patch(
        f"/api/v1/protocols/{protocol.code}/versions/1.0",
        {"parameters": {"deep_table": deep_value}},
        content_type="application/json",
    )
    assert response.status_code == 400, response.content[:300]
    assert "deep_table" in json.dumps(response.json()) or "Deep table" in json.dumps(
        response.json()
    )


@pytest.mark.django_db
def test_a_design_csv_wider_than_the_limit_is_a_400_naming_the_limit(client, pi, protocol):
    build_draft(protocol=protocol, user=pi, items=1)
    client.force_login(pi)
    header = ",".join(f"c{i}" for i in range(200_000))
    upload = SimpleUploadedFile("wide.csv", (header + "\n" + "," * 199_999 + "\n").encode())
    response = client.post(
        f"/api/v1/protocols/{protocol.code}/versions/1.0/design/import",
        {"file": upload, "format": "csv"},
    )
    assert response.status_code == 400, response.content[:300]
    assert f"{CSV_MAX_COLUMNS:,}" in json.dumps(response.json())


def test_a_staged_preview_is_named_by_a_sha256_only(tmp_path, settings):
    """The sibling of the docs slug: the confirm form's digest names a file; anything but a
    SHA-256 names none, before any file-system call."""
    from types import SimpleNamespace

    from apps.responses.staging import preview_discard, preview_load

    settings.RESPONSE_IMPORT_STAGING_DIR = tmp_path
    version = SimpleNamespace(pk=1, protocol_id=1)
    for digest in ("a" * 300, "../../etc/passwd", "A" * 64, ""):
        assert preview_load(user_id=1, version=version, digest=digest) is None
        preview_discard(user_id=1, version=version, digest=digest)
