"""The accessibility basics (labels, contrast, no sideways scrolling at 375 px) on the pages
issue #21 added: documentation, password change and reset, invitations on the members page,
the rubric field editor with its preview, a rubric field's page and the decision table's rows."""

import pytest

from apps.protocols.services import protocol_create
from apps.raters.services import rubric_apply_template
from tests.factories import make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_new_pages_sweep(journey):
    pi = make_user("pat-pi")
    protocol = protocol_create(user=pi, code="OPB-S", title="Sweep study", template="opb")
    rubric_apply_template(version=protocol.versions.get(label="1.0"), template="opb")
    journey.sign_in("pat-pi")
    pages = [
        "/docs/import-formats/",
        "/docs/machine-scores/",
        "/account/password/",
        "/protocols/OPB-S/members/",
        "/protocols/",
        "/protocols/OPB-S/v/1.0/rubric/",
        "/protocols/OPB-S/v/1.0/rubric/fields/refusal/",
        "/protocols/OPB-S/v/1.0/decision-table/",
    ]
    failures = []
    for width in (1280, 375):
        journey.page.set_viewport_size({"width": width, "height": 800})
        for path in pages:
            response = journey.go(path)
            assert response.status == 200, f"{path} answered {response.status}"
            try:
                journey.check_accessibility()
            except AssertionError as error:
                failures.append(f"{width}px {str(error).splitlines()[0]}")
    journey.context.clear_cookies()
    for path in ("/password-reset/", "/login/"):
        journey.go(path)
        try:
            journey.check_accessibility()
        except AssertionError as error:
            failures.append(str(error).splitlines()[0])
    assert not failures, "\n".join(failures)
