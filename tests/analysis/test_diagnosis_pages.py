"""The design diagnosis on the draft's page, the version page and the public page (issue #35
§5–6): the form declares the world, the run is queued (never computed in the request), the
table shows diagnosand × estimate with MC SE and plain-word warnings, the plots draw, the
frozen version shows its diagnosis or "no design diagnosis", the public page shows it once
published; a reviewer reaches none of it."""

import pytest
from django.urls import reverse

from apps.accounts.models import Role
from apps.accounts.services import membership_grant
from apps.analysis.models import DiagnosisState
from apps.registry.services import version_publish
from tests.factories import UserFactory, freeze, xstest_shaped_draft

pytestmark = pytest.mark.django_db


def _form(**world):
    data = {"sims": "6", "seed": "3", "size": "", "size_values": ""}
    data.update({f"world__{k}": str(v) for k, v in world.items()})
    return data


def test_declare_run_read_freeze_and_publish(client, django_capture_on_commit_callbacks):
    draft = xstest_shaped_draft(12, code="XS-PAGE", evaluands=1)
    pi = draft.created_by
    client.force_login(pi)
    url = reverse("analysis:diagnosis", args=["XS-PAGE", "1.0"])
    page = client.get(url).content.decode()
    assert "Item ICC" in page and "Reviewer accuracy" in page  # the world's fields, with help
    assert "No design diagnosis yet." in page
    version_page = reverse("protocols:version", args=["XS-PAGE", "1.0"])
    assert "Diagnose the design" in client.get(version_page).content.decode()

    refused = client.post(url, _form(item_icc=3))
    assert refused.status_code == 200 and not draft.design_diagnoses.exists()

    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(
            url, _form(**{"rate:S:2_full_refusal": 0.06, "reference_rate": 0.05, "item_icc": 0})
        )
    assert answer.status_code == 302
    diagnosis = draft.design_diagnoses.get()
    assert diagnosis.state == DiagnosisState.SUCCEEDED, diagnosis.error
    page = client.get(url).content.decode()
    assert "Power" in page and "Coverage" in page and "±" in page
    # A rate barely above the reference is found rarely: said in plain words.
    assert "power below 80%" in page
    status = client.get(
        reverse("analysis:diagnosis-status", args=["XS-PAGE", "1.0", diagnosis.number])
    )
    assert "Succeeded" in status.content.decode()
    svg = client.get(
        reverse("analysis:diagnosis-plot", args=["XS-PAGE", "1.0", diagnosis.number, 0]) + "?w=340"
    )
    assert svg["Content-Type"] == "image/svg+xml" and b"<svg" in svg.content

    reviewer = UserFactory()
    membership_grant(user=reviewer, protocol_id=draft.protocol_id, role=Role.REVIEWER)
    client.force_login(reviewer)
    assert client.get(url).status_code == 404
    # An auditor reads no draft still being written: neither its page nor its diagnosis blob,
    # until the version is frozen.
    auditor = UserFactory()
    membership_grant(user=auditor, protocol_id=draft.protocol_id, role=Role.AUDITOR)
    blob_url = f"/api/v1/blob/{diagnosis.result_id}"
    client.force_login(auditor)
    assert client.get(url).status_code == 403
    assert client.get(blob_url).status_code == 404
    client.force_login(pi)
    assert client.get(blob_url).status_code == 200

    frozen = freeze(draft, pi)
    client.force_login(auditor)
    assert client.get(blob_url).status_code == 200
    client.force_login(pi)
    page = client.get(version_page).content.decode()
    assert "Frozen with this version" in page and diagnosis.result_id[:16] in page
    version_publish(version=frozen, user=pi)
    client.logout()
    public = client.get(reverse("registry:version", args=["XS-PAGE", "1.0"])).content.decode()
    assert "Design diagnosis" in public and diagnosis.result_id[:16] in public
    blob = client.get(f"/api/v1/blob/{diagnosis.result_id}")
    assert blob.status_code == 200


def test_a_frozen_version_without_one_says_so(client):
    draft = xstest_shaped_draft(8, code="XS-NONE", evaluands=1)
    freeze(draft, draft.created_by)
    client.force_login(draft.created_by)
    page = client.get(reverse("protocols:version", args=["XS-NONE", "1.0"])).content.decode()
    assert "No design diagnosis." in page
