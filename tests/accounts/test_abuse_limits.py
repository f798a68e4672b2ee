"""Sign-in lockout (django-axes), API throttles (DRF) and the Content-Security-Policy
(issue #18, "Why" 5)."""

import re
from pathlib import Path

import pytest
from django.test import Client
from rest_framework.throttling import SimpleRateThrottle

from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]


def _sign_in(client: Client, username: str, password: str, ip: str = "10.0.0.1"):
    return client.post("/login/", {"username": username, "password": password}, REMOTE_ADDR=ip)


def test_wrong_passwords_lock_the_username_out_even_with_the_right_one(settings):
    user = UserFactory(username="target")
    user.set_password("right-password-123")
    user.save()
    client = Client()
    for n in range(settings.AXES_FAILURE_LIMIT - 1):
        assert _sign_in(client, "target", f"wrong-{n}", ip=f"10.0.1.{n}").status_code == 200
    # The N-th failure locks the username out.
    assert _sign_in(client, "target", "wrong-last", ip="10.0.1.200").status_code == 429
    # From a fresh address, with the right password: still locked out (per user).
    locked = _sign_in(client, "target", "right-password-123", ip="10.9.9.9")
    assert locked.status_code == 429
    assert "_auth_user_id" not in client.session


def test_wrong_passwords_from_one_address_lock_that_address_out(settings):
    other = UserFactory(username="bystander")
    other.set_password("right-password-123")
    other.save()
    client = Client()
    for n in range(settings.AXES_FAILURE_LIMIT):
        _sign_in(client, f"guess-{n}", "x", ip="10.0.2.1")
    assert _sign_in(client, "bystander", "right-password-123", ip="10.0.2.1").status_code == 429
    assert _sign_in(Client(), "bystander", "right-password-123", ip="10.0.2.2").status_code == 302


def test_a_good_sign_in_resets_the_count(settings):
    user = UserFactory(username="forgetful")
    user.set_password("right-password-123")
    user.save()
    for _ in range(3):
        for n in range(settings.AXES_FAILURE_LIMIT - 1):
            _sign_in(Client(), "forgetful", f"wrong-{n}")
        assert _sign_in(Client(), "forgetful", "right-password-123").status_code == 302


def test_the_api_is_throttled(settings, monkeypatch, reviewer):
    from django.core.cache import cache

    cache.clear()
    monkeypatch.setattr(
        SimpleRateThrottle, "THROTTLE_RATES", {"user": "5/minute", "anon": "2/minute"}
    )
    client = Client()
    client.force_login(reviewer)
    answers = [client.get("/api/v1/me").status_code for _ in range(7)]
    assert answers == [200] * 5 + [429] * 2
    assert client.get("/api/v1/me").has_header("Retry-After")
    cache.clear()


def test_every_page_carries_a_csp_without_inline_script(client, pi, protocol):
    client.force_login(pi)
    response = client.get(f"/protocols/{protocol.code}/")
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    assert "object-src 'none'" in policy and "frame-ancestors 'none'" in policy


def test_no_template_holds_an_inline_script_or_event_handler():
    # A JSON-LD data block (the registry's schema.org metadata) is never executed, so the CSP's
    # script-src does not apply to it; its JSON is escaped for the element (registry views).
    inline_script = re.compile(
        r'<script(?![^>]*\b(?:src=|type="application/ld\+json"))[^>]*>', re.IGNORECASE
    )
    handler = re.compile(r"\son[a-z]+\s*=", re.IGNORECASE)
    offenders = []
    for path in (ROOT / "templates").rglob("*.html"):
        text = path.read_text()
        if inline_script.search(text) or handler.search(text):
            offenders.append(str(path.relative_to(ROOT)))
    assert not offenders
