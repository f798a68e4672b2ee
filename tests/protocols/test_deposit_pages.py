"""Issue #17 §5: the PI deposits a version frozen elsewhere from a page or the API. The text is
kept byte for byte with its SHA-256, beside where and when it was frozen and why it was
superseded; the deposited version then never passes the gate and never runs an analysis."""

import hashlib

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.deviations.models import LogEntry
from apps.protocols.models import Blob, Deposit

pytestmark = pytest.mark.django_db
JSON = "application/json"
PAGE = "/protocols/OPB-T/v/1.0/deposit/"
API = "/api/v1/protocols/OPB-T/versions/1.0/deposit"
PUBLISHED = "# OPB-01 v1.0\r\n\r\nε: to be fixed before scoring.  \n"


def test_the_pi_deposits_pasted_text_and_sees_its_sha256(client, pi, protocol):
    client.force_login(pi)
    assert client.get(PAGE).status_code == 200
    answer = client.post(
        PAGE,
        {
            "text": PUBLISHED,
            "frozen_where": "OSF, osf.io/abcde",
            "frozen_on": "2026-08-01",
            "note": "ε was undefined; v1.1 fixes it.",
        },
        follow=True,
    )
    digest = hashlib.sha256(PUBLISHED.encode()).hexdigest()
    page = answer.content.decode()
    assert digest in page and "osf.io/abcde" in page and "v1.1 fixes it" in page
    deposit = Deposit.objects.get(version__label="1.0")
    assert bytes(deposit.blob.content) == PUBLISHED.encode()  # \r\n and trailing spaces kept
    assert deposit.frozen_on.isoformat() == "2026-08-01"
    assert LogEntry.objects.filter(kind="import", rationale__contains=digest).exists()


def test_an_uploaded_file_is_kept_byte_for_byte(client, pi, protocol):
    client.force_login(pi)
    content = b"%PDF-1.4\n\xff\xfe binary \x00 bytes"
    upload = SimpleUploadedFile("v1.0.pdf", content, content_type="application/pdf")
    answer = client.post(PAGE, {"file": upload, "frozen_where": "Zenodo"})
    assert answer.status_code == 302
    blob = Deposit.objects.get().blob
    assert bytes(blob.content) == content and blob.sha256 == hashlib.sha256(content).hexdigest()
    assert blob.media_type == "application/octet-stream"  # never served as the upload claims


@pytest.mark.parametrize(
    ("form", "field_text"),
    [
        ({"frozen_where": "OSF"}, "paste the published text or upload its file"),
        ({"text": PUBLISHED}, "This field is required"),
        ({"text": PUBLISHED, "frozen_where": "OSF", "frozen_on": "01/08/26x"}, "valid date"),
    ],
)
def test_a_bad_deposit_form_says_which_field_and_writes_nothing(
    client, pi, protocol, form, field_text
):
    client.force_login(pi)
    answer = client.post(PAGE, form)
    assert answer.status_code == 200 and field_text in answer.content.decode()
    assert not Deposit.objects.exists() and not Blob.objects.filter(size=len(PUBLISHED)).exists()


def test_a_deposited_version_never_passes_the_gate_nor_runs_an_analysis(client, pi, protocol):
    client.force_login(pi)
    body = {"text": PUBLISHED, "frozen_where": "OSF", "note": "superseded by v1.1"}
    created = client.post(API, body, content_type=JSON)
    assert created.status_code == 201, created.content
    out = created.json()
    assert out["sha256"] == hashlib.sha256(PUBLISHED.encode()).hexdigest()
    assert out["frozen_where"] == "OSF" and out["frozen_on"] is None
    assert out["note"] == "superseded by v1.1"
    assert client.get(API).json()["sha256"] == out["sha256"]
    assert client.get(out["blob_url"]).status_code == 200
    # Once deposited: not again, not frozen here, not analysed.
    assert client.post(API, body, content_type=JSON).status_code == 409
    freeze = client.post("/api/v1/protocols/OPB-T/versions/1.0/freeze")
    assert freeze.status_code in (400, 409), freeze.content
    run = client.post("/api/v1/protocols/OPB-T/versions/1.0/analysis-runs", {}, content_type=JSON)
    assert 400 <= run.status_code < 500, run.content
    page = client.get("/protocols/OPB-T/v/1.0/").content.decode()
    assert "Deposit it as a prior version" not in page and "Deposited: frozen elsewhere" in page
    assert client.get(PAGE).status_code == 302  # already deposited: back to the version page
    assert Deposit.objects.count() == 1


def test_a_version_frozen_here_is_not_deposited(client, pi, frozen):
    client.force_login(pi)
    url = f"/api/v1/protocols/OPB-T/versions/{frozen.label}/deposit"
    answer = client.post(url, {"text": "x", "frozen_where": "OSF"}, content_type=JSON)
    assert answer.status_code == 409 and "frozen by this registry" in answer.json()["detail"]
    assert not Deposit.objects.exists()


def test_the_api_refuses_an_empty_text_naming_the_field(client, pi, protocol):
    client.force_login(pi)
    answer = client.post(API, {"frozen_where": "OSF"}, content_type=JSON)
    assert answer.status_code == 400 and "text" in answer.json()
    assert not Deposit.objects.exists()


@pytest.mark.parametrize(
    ("person", "page", "read", "write"),
    [
        ("editor", 403, 404, 403),
        ("auditor", 403, 403, 403),
        ("reviewer", 404, 404, 404),
        ("outsider", 404, 404, 404),
    ],
)
def test_only_the_pi_deposits_and_a_reviewer_gets_404(
    client, request, protocol, person, page, read, write
):
    client.force_login(request.getfixturevalue(person))
    assert client.get(PAGE).status_code == page
    assert client.get(API).status_code == read  # nothing deposited yet, or not theirs to see
    body = {"text": PUBLISHED, "frozen_where": "OSF"}
    assert client.post(API, body, content_type=JSON).status_code == write
    assert not Deposit.objects.exists()
