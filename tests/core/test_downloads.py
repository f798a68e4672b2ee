"""Every download is named in one place (``apps.core.views.named``): its disposition and file."""

import pytest
from django.http import HttpResponse, JsonResponse
from django.urls import reverse

from apps.core.views import named


def test_a_download_is_an_attachment_and_a_citation_is_shown_inline():
    assert (
        named(HttpResponse(b""), "a.csv")["Content-Disposition"] == 'attachment; filename="a.csv"'
    )
    shown = named(JsonResponse({}), "P-1-v1.0-bibtex", inline=True)
    assert shown["Content-Disposition"] == 'inline; filename="P-1-v1.0-bibtex"'


@pytest.mark.django_db
def test_the_public_signing_key_is_a_named_download(client):
    response = client.get(reverse("registry:signing-key"))
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="signing-key.json"'
