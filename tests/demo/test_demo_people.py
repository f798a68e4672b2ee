"""``load_demo``'s people: created with the demo's passwords, and left alone once they exist."""

import pytest

from apps.demo.people import DEMO_PEOPLE, demo_people_ensure

pytestmark = pytest.mark.django_db


def test_a_second_load_leaves_an_existing_password_alone():
    users = demo_people_ensure()
    pi = users["pi"]
    assert pi.check_password(DEMO_PEOPLE[0].password)
    pi.set_password("my-own-pass-1")
    pi.save()
    session_hash = pi.get_session_auth_hash()
    demo_people_ensure()
    pi.refresh_from_db()
    assert pi.check_password("my-own-pass-1")
    assert pi.get_session_auth_hash() == session_hash  # nobody is signed out


def test_a_user_without_a_usable_password_gets_the_demo_one():
    users = demo_people_ensure()
    users["auditor"].set_unusable_password()
    users["auditor"].save()
    demo_people_ensure()
    users["auditor"].refresh_from_db()
    assert users["auditor"].check_password("demo-auditor-pass")
