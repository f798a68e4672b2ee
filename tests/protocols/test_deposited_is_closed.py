"""Issue #17 §5: a deposited version (frozen elsewhere, kept as history) never changes here —
not its sections, its design, its rubric text nor its roster, whichever app is asked."""

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from apps.demo.opb01 import opb01_history_build
from apps.items.models import Family
from apps.items.services import family_create, item_create
from apps.protocols.models import ProtocolVersion
from apps.protocols.services import version_update
from apps.raters.services.rubric_text import rubric_text_set
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_no_app_changes_a_deposited_version():
    pi = UserFactory()
    deposited = ProtocolVersion.objects.get(pk=opb01_history_build(pi=pi).v1_0.pk)
    assert deposited.is_deposited and deposited.is_draft and not deposited.is_editable
    family = Family.objects.filter(version=deposited).first()
    attempts = {
        "sections": lambda: version_update(version=deposited, user=pi, sections={"design": "x"}),
        "family": lambda: family_create(version=deposited, code="Z", name="Z", role="harm"),
        "item": lambda: item_create(version=deposited, family=family, code="z-01"),
        "rubric text": lambda: rubric_text_set(version=deposited, text="# A rubric\n"),
    }
    for attempt in attempts.values():
        with pytest.raises(ValidationError, match="deposited"):
            attempt()  # refused, and the refusal says why: the version is deposited
    assert not deposited.items.filter(code="z-01").exists()


def test_a_deposited_versions_design_pages_offer_no_form_and_say_why(client):
    pi = UserFactory()
    deposited = ProtocolVersion.objects.get(pk=opb01_history_build(pi=pi).v1_0.pk)
    client.force_login(pi)
    kwargs = {"protocol_code": deposited.protocol.code, "label": deposited.label}
    page = client.get(reverse("items:design", kwargs=kwargs))
    assert page.status_code == 200
    text = page.content.decode()
    assert "deposited (frozen elsewhere" in text
    new_item = reverse("items:item-new", kwargs=kwargs)
    assert new_item not in text and reverse("items:import", kwargs=kwargs) not in text
