"""The Content-Security-Policy header: built once per process for a plain response
(``apps.core.middleware.CSPMiddleware``), and still django-csp's own answer in every case.

Each expectation is django-csp's: the header its ``build_policy`` gives for the same settings,
decorators and nonce, so the cache can only pass by agreeing with the library."""

import pytest
from csp.constants import HEADER, HEADER_REPORT_ONLY, NONCE
from csp.utils import build_policy
from django.http import HttpResponse
from django.test import RequestFactory, override_settings

from apps.core.middleware import CSPMiddleware

POLICY = {"DIRECTIVES": {"default-src": ["'self'"], "img-src": ["'self'", "data:"]}}
OTHER = {"DIRECTIVES": {"default-src": ["'none'"]}}


def _parts(header: str) -> dict[str, str]:
    """A policy's directives by name (django-csp does not keep their order from one build to
    the next)."""
    return dict(part.strip().split(" ", 1) for part in header.split(";"))


def _run(response=None, *, path="/", touch_nonce=False):
    request = RequestFactory().get(path)

    def view(request):
        if touch_nonce:
            str(request.csp_nonce)
        return response if response is not None else HttpResponse("page")

    middleware = CSPMiddleware(view)
    return request, middleware(request)


@override_settings(CONTENT_SECURITY_POLICY=POLICY)
def test_a_plain_response_gets_the_settings_policy_each_time():
    for _ in range(3):
        _, response = _run()
        assert _parts(response[HEADER]) == _parts(build_policy(config=POLICY["DIRECTIVES"]))
        assert "data:" in response[HEADER]


def test_a_settings_change_is_seen_at_once():
    with override_settings(CONTENT_SECURITY_POLICY=POLICY):
        _, first = _run()
    with override_settings(CONTENT_SECURITY_POLICY=OTHER):
        _, second = _run()
    assert first[HEADER] != second[HEADER]
    assert second[HEADER] == "default-src 'none'"


@override_settings(CONTENT_SECURITY_POLICY=POLICY)
def test_a_decorated_response_keeps_its_own_policy():
    response = HttpResponse("page")
    response._csp_update = {"img-src": ["https://example.org"]}
    _, response = _run(response)
    assert "https://example.org" in response[HEADER]
    assert _parts(response[HEADER]) == _parts(
        build_policy(config=POLICY["DIRECTIVES"], update={"img-src": ["https://example.org"]})
    )


@override_settings(CONTENT_SECURITY_POLICY={"DIRECTIVES": {"script-src": ["'self'", NONCE]}})
def test_a_nonce_drawn_by_the_view_is_in_the_header():
    request, response = _run(touch_nonce=True)
    assert f"'nonce-{request._csp_nonce}'" in response[HEADER]


@override_settings(CONTENT_SECURITY_POLICY=POLICY)
def test_an_exempt_response_and_an_excluded_path_get_no_header():
    exempt = HttpResponse("page")
    exempt._csp_exempt = True
    _, response = _run(exempt)
    assert HEADER not in response
    with override_settings(CONTENT_SECURITY_POLICY={**POLICY, "EXCLUDE_URL_PREFIXES": ["/x/"]}):
        _, excluded = _run(path="/x/page")
        _, included = _run(path="/y/page")
    assert HEADER not in excluded
    assert HEADER in included


@override_settings(CONTENT_SECURITY_POLICY=POLICY, CONTENT_SECURITY_POLICY_REPORT_ONLY=OTHER)
def test_the_report_only_header_is_built_too():
    _, response = _run()
    assert _parts(response[HEADER_REPORT_ONLY]) == _parts(
        build_policy(config=OTHER["DIRECTIVES"], report_only=True)
    )


@override_settings(CONTENT_SECURITY_POLICY=POLICY)
def test_a_nonce_asked_for_after_the_header_is_written_is_an_error():
    from csp.exceptions import CSPNonceError

    request, _ = _run()
    with pytest.raises(CSPNonceError):
        str(request.csp_nonce)


@pytest.mark.django_db
def test_a_real_page_carries_the_projects_policy(client, settings):
    response = client.get("/accounts/login/")
    expected = build_policy(config=settings.CONTENT_SECURITY_POLICY["DIRECTIVES"])
    assert _parts(response[HEADER]) == _parts(expected)


@override_settings(CONTENT_SECURITY_POLICY=POLICY)
def test_an_empty_per_response_config_is_django_csps_to_answer():
    response = HttpResponse("page")
    response._csp_config = {}
    _, response = _run(response)
    expected = build_policy(config={})
    assert response.get(HEADER, "") == expected
    assert "data:" not in response.get(HEADER, "")


@override_settings(CONTENT_SECURITY_POLICY=POLICY, DEBUG=True)
def test_under_debug_a_404_page_gets_no_header_as_django_csp_gives_none():
    _, response = _run(HttpResponse("missing", status=404))
    assert HEADER not in response
