"""OPB-01 §6.3: a surface's fresh-session guarantee (yes, no or unknown, with a note) is
recorded from the evaluand's page or the API, once (append-only), and shown on the roster."""

import pytest

from apps.responses.models import RosterEntry, SessionGuarantee
from tests.factories import build_draft

pytestmark = pytest.mark.django_db
JSON = "application/json"


@pytest.fixture
def version(protocol, pi):
    return build_draft(protocol=protocol, user=pi, evaluands=("alpha", "beta"))


@pytest.fixture
def alpha(version):
    return RosterEntry.objects.get(version=version, code="alpha").evaluand


def test_the_pi_records_a_fresh_session_guarantee_on_the_evaluand_page(client, pi, alpha, version):
    client.force_login(pi)
    page = client.get(f"/evaluands/{alpha.pk}/").content.decode()
    assert "Not recorded" in page and f"/evaluands/{alpha.pk}/fresh-session/" in page
    answer = client.post(
        f"/evaluands/{alpha.pk}/fresh-session/",
        {"fresh_session": "no", "note": "the consumer app keeps memory on"},
        follow=True,
    )
    page = answer.content.decode()
    assert 'data-fresh-session="no"' in page and "keeps memory on" in page
    roster = client.get(f"/protocols/{version.protocol.code}/v/{version.label}/roster/")
    roster = roster.content.decode()
    assert "keeps memory on" in roster and "Unknown (record it)" in roster  # beta: none yet


def test_the_record_is_kept_as_first_written(client, pi, alpha):
    client.force_login(pi)
    url = f"/api/v1/evaluands/{alpha.pk}/fresh-session"
    first = client.post(url, {"fresh_session": "yes", "note": "API sessions"}, content_type=JSON)
    assert first.status_code == 201, first.content
    assert first.json()["fresh_session"]["fresh_session"] == "yes"
    again = client.post(url, {"fresh_session": "no"}, content_type=JSON)
    assert again.status_code == 400 and "already has" in str(again.json()["fresh_session"])
    page = client.post(f"/evaluands/{alpha.pk}/fresh-session/", {"fresh_session": "no"})
    assert page.status_code == 302  # already recorded: back to the evaluand, nothing written
    record = SessionGuarantee.objects.get(evaluand=alpha)
    assert (record.fresh_session, record.note) == ("yes", "API sessions")
    detail = client.get(f"/api/v1/evaluands/{alpha.pk}").json()
    assert detail["fresh_session"]["note"] == "API sessions"


@pytest.mark.parametrize("value", ["maybe", "", None])
def test_a_value_other_than_yes_no_or_unknown_is_refused_naming_the_field(client, pi, alpha, value):
    client.force_login(pi)
    body = {"fresh_session": value}
    answer = client.post(f"/api/v1/evaluands/{alpha.pk}/fresh-session", body, content_type=JSON)
    assert answer.status_code == 400 and "fresh_session" in answer.json()
    page = client.post(f"/evaluands/{alpha.pk}/fresh-session/", {"fresh_session": value or ""})
    assert page.status_code == 200 and "fresh_session" in page.content.decode()
    assert not SessionGuarantee.objects.exists()


def test_an_unrecorded_guarantee_reads_as_null_in_the_api(client, pi, alpha):
    client.force_login(pi)
    assert client.get(f"/api/v1/evaluands/{alpha.pk}").json()["fresh_session"] is None


@pytest.mark.parametrize(("person", "status"), [("reviewer", 404), ("auditor", 403)])
def test_a_reviewer_gets_404_and_an_auditor_records_nothing(client, request, alpha, person, status):
    client.force_login(request.getfixturevalue(person))
    body = {"fresh_session": "yes"}
    api = client.post(f"/api/v1/evaluands/{alpha.pk}/fresh-session", body, content_type=JSON)
    assert api.status_code == status
    assert client.post(f"/evaluands/{alpha.pk}/fresh-session/", body).status_code == status
    if person == "reviewer":
        assert client.get(f"/evaluands/{alpha.pk}/fresh-session/").status_code == 404
    assert not SessionGuarantee.objects.exists()
