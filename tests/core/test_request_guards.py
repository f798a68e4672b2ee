"""Server errors any signed-in user could cause, each answered as a client error or in JSON
(issue #18, "Why" 4)."""

import io
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.db import OperationalError
from django.test import Client

from apps.accounts.models import Membership
from apps.raters.services import scoring_open, task_next
from tests.factories import frozen_study

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/tasks/%00",
        "/api/v1/tasks/abc%00def/score",
        "/api/v1/protocols/%00/versions",
        "/protocols/%00/",
        "/api/v1/evaluands?q=%00",
        "/api/v1/evaluands?%00=1",
        "/queue/?x=a%00b",
    ],
)
def test_a_nul_byte_in_the_path_or_query_is_a_400(client, reviewer, url):
    client.force_login(reviewer)
    response = client.get(url)
    assert response.status_code == 400
    assert "NUL" in response.content.decode()
    if url.startswith("/api/"):
        assert response["Content-Type"] == "application/json"


@pytest.mark.django_db
def test_a_nul_byte_in_a_form_is_a_400(client, pi, protocol):
    client.force_login(pi)
    response = client.post(
        f"/protocols/{protocol.code}/members/", {"username": "a\x00b", "role": "editor"}
    )
    assert response.status_code == 400
    assert "'username'" in response.content.decode()
    anonymous = Client().post("/login/", {"username": "\x00", "password": "x"})
    assert anonymous.status_code == 400


@pytest.mark.django_db
def test_a_score_holding_a_400_digit_integer_is_a_400_naming_the_field():
    study = frozen_study(responses=1, template="opb", units=2, texts=["one two"])
    scoring_open(version=study.version, user=study.pi)
    reviewer = study.reviewers[0]
    held = task_next(version_or_none=None, reviewer=reviewer)
    client = Client()
    client.force_login(reviewer)
    body = (
        '{"idempotency_key": "k", "values": {"units_supplied": [1], "refusal": false, '
        '"deflection": false, "scope_reduction": false, "hedge_count": 1' + "0" * 400 + "}}"
    )
    response = client.post(
        f"/api/v1/tasks/{held.task.token}/score", body, content_type="application/json"
    )
    assert response.status_code == 400, response.content
    assert "hedge_count" in response.json()
    listed = client.post(
        f"/api/v1/tasks/{held.task.token}/score",
        body.replace('"units_supplied": [1]', '"units_supplied": [1' + "0" * 400 + "]").replace(
            "1" + "0" * 400 + "}}", "1}}"
        ),
        content_type="application/json",
    )
    assert listed.status_code == 400 and "units_supplied" in listed.json()
    page = client.post(
        f"/tasks/{held.task.token}/",
        {"hedge_count": "9" * 5000, "units_supplied": ["²", "1"], "idempotency_key": "p"},
    )
    assert page.status_code == 200
    assert "hedge_count" in page.content.decode()


@pytest.mark.django_db
def test_a_malformed_remove_value_on_the_members_form_is_a_form_error(client, pi, protocol):
    client.force_login(pi)
    response = client.post(
        f"/protocols/{protocol.code}/members/", {"remove": "abc", "reason": "x"}, follow=True
    )
    assert response.status_code == 200
    assert "Not removed: Enter a whole number." in response.content.decode()
    assert Membership.objects.filter(protocol=protocol).count() == 1


@pytest.mark.django_db
def test_a_database_that_went_away_answers_json_503_under_the_api(client, reviewer, monkeypatch):
    def dead(**kwargs):
        raise OperationalError("terminating connection due to administrator command")

    monkeypatch.setattr("apps.raters.apis.reviewer_progress", dead)
    client.force_login(reviewer)
    response = client.get("/api/v1/tasks/progress")
    assert response.status_code == 503
    assert response["Content-Type"] == "application/json"
    assert "database is unavailable" in response.json()["detail"]


@pytest.mark.django_db
def test_any_other_fault_under_the_api_answers_json_not_html(reviewer, monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr("apps.raters.apis.reviewer_progress", broken)
    client = Client(raise_request_exception=False)
    client.force_login(reviewer)
    response = client.get("/api/v1/tasks/progress")
    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    assert "Server error" in response.json()["detail"]


class _ResetStream(io.RawIOBase):
    """A request body whose client resets the connection after the first bytes."""

    def __init__(self) -> None:
        self.sent = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.sent:
            raise ConnectionResetError(104, "Connection reset by peer")
        self.sent = True
        buffer[:10] = b"username=a"
        return 10


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        ("/login/", "application/x-www-form-urlencoded"),
        ("/api/v1/protocols", "application/json"),
    ],
)
def test_a_client_that_resets_mid_body_is_not_logged_as_a_server_error(path, content_type, caplog):
    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": path,
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "wsgi.url_scheme": "http",
        "CONTENT_TYPE": content_type,
        "CONTENT_LENGTH": "100000",
        "wsgi.input": io.BufferedReader(_ResetStream()),
        "wsgi.errors": io.StringIO(),
    }
    statuses = []
    with caplog.at_level(logging.INFO):
        b"".join(WSGIHandler()(environ, lambda status, headers: statuses.append(status)))
    assert statuses and statuses[0].startswith(("400", "403")), statuses
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.records


def test_under_production_settings_without_collectstatic_a_404_is_a_404(tmp_path):
    code = (
        "import django, os; from django.conf import settings; "
        f"settings.STATIC_ROOT = {str(tmp_path)!r}; django.setup(); "
        "from django.test import Client; "
        "r = Client().get('/no/such/page/', secure=True); print(r.status_code); "
        "print('static/css/preregistry.css' in r.content.decode())"
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")
    }
    env |= {
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "SECRET_KEY": "x" * 60,
        "ALLOWED_HOSTS": "testserver",
    }
    probe = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.split() == ["404", "True"], probe.stdout + probe.stderr
