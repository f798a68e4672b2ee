"""The accessibility basics on the pages the journeys do not pass through: a PI's view of a
protocol with two frozen versions, its design, roster, rubric, history, diff and log."""

import pytest

from apps.protocols.models import ProtocolVersion
from tests.factories import logged_protocol, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_page_sweep(journey):
    pi = make_user("pat-pi")
    protocol = logged_protocol(code="OPB-J5", pi=pi, auditor=make_user("ada-auditor"))
    v11 = ProtocolVersion.objects.get(protocol=protocol, label="1.1")
    base = "/protocols/OPB-J5"
    pages = [
        "/protocols/",
        f"{base}/",
        f"{base}/members/",
        f"{base}/diff/?from=1.0&to=1.1",
        f"{base}/v/1.1/print/",
        f"{base}/v/1.1/history/",
        f"{base}/v/1.1/design/",
        f"{base}/v/1.1/design/levels/",
        f"{base}/v/1.1/design/families/",
        f"{base}/v/1.1/design/items/B01/",
        f"{base}/v/1.1/roster/",
        f"{base}/v/1.1/responses/",
        f"{base}/v/1.1/responses/import/",
        f"{base}/v/1.1/attempts/",
        f"/protocols/{v11.protocol.code}/v/{v11.label}/rubric/",
        f"/protocols/{v11.protocol.code}/v/{v11.label}/scoring/",
        f"{base}/log/",
        f"{base}/deviations/new/",
        "/evaluands/",
        "/account/token/",
    ]
    journey.sign_in("pat-pi")
    failures = []
    for path in pages:
        response = journey.go(path)
        assert response.status == 200, f"{path} answered {response.status}"
        try:
            journey.check_accessibility()
        except AssertionError as error:
            failures.append(str(error).split("\n")[0])
    assert not failures, "\n".join(failures)
