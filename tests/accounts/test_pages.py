"""Login, logout, each role's navigation, and API authentication by session and token."""

import pytest
from rest_framework.authtoken.models import Token

pytestmark = pytest.mark.django_db

NAV = {"Protocols": "/protocols/", "My queue": "/queue/", "Logs": "/logs/"}


def _nav_links(html: str) -> set[str]:
    nav = html.split('<nav aria-label="Main">', 1)[1].split("</nav>", 1)[0]
    return {label for label, href in NAV.items() if f'href="{href}"' in nav}


def test_login_page_is_served_with_labelled_inputs(client):
    response = client.get("/login/")
    assert response.status_code == 200
    html = response.content.decode()
    assert '<label for="id_username">' in html
    assert '<label for="id_password">' in html


def test_sign_in_and_out(client, pi):
    response = client.post("/login/", {"username": pi.username, "password": "pass-for-tests"})
    assert response.status_code == 302
    assert client.get("/protocols/").status_code == 200
    client.post("/logout/")
    assert client.get("/protocols/").status_code == 302


def test_wrong_password_is_refused_with_a_message(client, pi):
    response = client.post("/login/", {"username": pi.username, "password": "wrong"})
    assert response.status_code == 200
    assert "Please enter a correct username and password" in response.content.decode()


@pytest.mark.parametrize(
    ("person", "places", "home"),
    [
        ("pi", {"Protocols", "Logs"}, "/protocols/"),
        ("editor", {"Protocols", "Logs"}, "/protocols/"),
        ("reviewer", {"My queue"}, "/queue/"),
        ("auditor", {"Protocols", "Logs"}, "/logs/"),
    ],
)
def test_each_role_sees_its_own_places(client, request, person, places, home):
    client.force_login(request.getfixturevalue(person))
    response = client.get("/", follow=True)
    assert response.redirect_chain[-1][0] == home
    assert _nav_links(response.content.decode()) == places


def test_a_reviewer_does_not_see_protocol_titles(client, reviewer, protocol):
    client.force_login(reviewer)
    html = client.get("/protocols/").content.decode()
    assert protocol.title not in html


def test_api_accepts_session_and_token_and_refuses_anonymous(client, pi):
    assert client.get("/api/v1/me").status_code in (401, 403)
    token = Token.objects.create(user=pi)
    response = client.get("/api/v1/me", HTTP_AUTHORIZATION=f"Token {token.key}")
    assert response.status_code == 200
    assert response.json() == {"username": pi.username, "roles": ["pi"]}
    client.force_login(pi)
    assert client.get("/api/v1/me").json()["username"] == pi.username


def test_api_token_page_rotates_the_token(client, pi):
    client.force_login(pi)
    client.post("/account/token/")
    first = Token.objects.get(user=pi).key
    client.post("/account/token/")
    assert Token.objects.get(user=pi).key != first


def test_creating_a_protocol_makes_you_its_pi(client, outsider):
    client.force_login(outsider)
    response = client.post("/protocols/new/", {"code": "OPB-01", "title": "Operativity battery"})
    assert response.status_code == 302
    assert outsider.memberships.get().role == "pi"


def test_a_malformed_protocol_code_is_refused_naming_the_field(client, outsider):
    client.force_login(outsider)
    response = client.post("/protocols/new/", {"code": "no spaces please", "title": "T"})
    assert response.status_code == 200
    assert "Use letters, digits" in response.content.decode()


def test_openapi_schema_is_served(client, pi):
    client.force_login(pi)
    response = client.get("/api/schema/")
    assert response.status_code == 200
    assert b"openapi" in response.content
