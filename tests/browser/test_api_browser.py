"""The API browser at /api/schema/ui/ works offline: Swagger UI's assets are pinned
(drf-spectacular-sidecar) and served by the app itself, under the site's CSP."""

import pytest

from tests.factories import make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_api_browser_renders_operations_offline(journey, live_server):
    make_user("pat-pi")
    page = journey.page
    outside: list[str] = []
    refused: list[str] = []

    def only_this_site(route):
        if route.request.url.startswith(live_server.url):
            route.continue_()
        else:  # no network beyond the app: a CDN asset would fail here
            outside.append(route.request.url)
            route.abort()

    page.route("**/*", only_this_site)
    page.on(
        "console",
        lambda message: (
            refused.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    journey.sign_in("pat-pi")
    journey.go("/api/schema/ui/")
    page.wait_for_selector(".opblock", timeout=30_000)
    operations = page.locator(".opblock-summary-path").all_inner_texts()
    assert any("/api/v1/protocols" in text for text in operations), operations[:5]
    assert page.locator(".opblock").count() > 20
    assert not outside, f"the API browser fetched from outside the app: {outside[:3]}"
    assert not refused, refused[:3]
