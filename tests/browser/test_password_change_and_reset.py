"""A person changes their password when signed in, and resets a forgotten one by an e-mailed
link (Django's e-mail backend; the console in development, the test outbox here)."""

import re

import pytest
from django.core import mail

from tests.factories import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_password_change_and_reset(journey):
    user = make_user("pat-pi")
    user.email = "pat@example.org"
    user.save()
    page = journey.page
    journey.sign_in("pat-pi")

    journey.go("/account/token/")
    journey.click_and_wait(page.get_by_role("link", name="Change your password"))
    page.get_by_label("Old password").fill(PASSWORD)
    page.locator("#id_new_password1").fill("a-new-secret-2026")
    page.locator("#id_new_password2").fill("a-new-secret-2026")
    journey.snap("change")
    journey.click_and_wait(page.get_by_role("button", name="Change password"))
    assert page.get_by_role("heading", name="Your password is set").is_visible()
    user.refresh_from_db()
    assert user.check_password("a-new-secret-2026")

    # Forgotten: the sign-in page offers a reset; the link arrives by e-mail and works once.
    journey.context.clear_cookies()
    journey.go("/login/")
    journey.click_and_wait(page.get_by_role("link", name="Forgot your password?"))
    page.get_by_label("Email").fill("pat@example.org")
    journey.snap("reset")
    journey.click_and_wait(page.get_by_role("button", name="Send the link"))
    assert page.get_by_role("heading", name="Check your e-mail").is_visible()
    (message,) = mail.outbox
    link = re.search(r"https?://[^/\s]+(/password-reset/\S+/)", message.body).group(1)
    journey.go(link)
    page.wait_for_url(re.compile(r"/password-reset/.+/set-password/$"))
    page.locator("#id_new_password1").fill("a-third-secret-2026")
    page.locator("#id_new_password2").fill("a-third-secret-2026")
    journey.snap("reset-confirm")
    journey.click_and_wait(page.get_by_role("button", name="Set password"))
    assert page.get_by_role("heading", name="Your password is set").is_visible()
    journey.sign_in("pat-pi", "a-third-secret-2026")
    journey.go(link)
    assert page.get_by_role("heading", name="This link no longer works").is_visible()
