"""A PI invites a person by e-mail: the account is made, the role granted and logged, and the
e-mailed link lets the person set a password and sign in straight to their place."""

import re

import pytest
from django.core import mail

from apps.accounts.models import Membership, User
from apps.deviations.models import LogEntry
from apps.protocols.services import protocol_create
from tests.factories import make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_pi_invites_an_auditor_by_email(journey):
    pi = make_user("pat-pi")
    protocol = protocol_create(user=pi, code="OPB-I", title="Invitation study", template="opb")
    page = journey.page
    journey.sign_in("pat-pi")
    journey.go("/protocols/OPB-I/members/")
    page.locator("#id_invite-email").fill("Ada@Example.org")
    page.locator("#id_invite-role").select_option("auditor")
    journey.snap("invite")
    journey.tour("first-study-1-invite")
    journey.click_and_wait(page.get_by_role("button", name="Send invitation"))
    assert page.get_by_text("ada@example.org is Auditor now; the invitation is sent").is_visible()

    ada = User.objects.get(email="ada@example.org")
    assert not ada.has_usable_password()
    assert Membership.objects.filter(user=ada, protocol=protocol, role="auditor").exists()
    entry = LogEntry.objects.filter(protocol=protocol, kind="membership").latest("pk")
    assert "Granted Auditor to ada@example.org: invited by e-mail" in entry.rationale

    (message,) = mail.outbox
    assert message.to == ["ada@example.org"] and "OPB-I" in message.subject
    link = re.search(r"https?://[^/\s]+(/password-reset/\S+/)", message.body).group(1)
    journey.context.clear_cookies()
    journey.go(link)
    page.wait_for_url(re.compile(r"/set-password/$"))
    # The page says whose password this is: the username to sign in with (issue #37 §10).
    assert "ada@example.org" in page.locator("#set-password-user").inner_text()
    page.locator("#id_new_password1").fill("ada-chooses-2026")
    page.locator("#id_new_password2").fill("ada-chooses-2026")
    journey.click_and_wait(page.get_by_role("button", name="Set password"))
    journey.sign_in("ada@example.org", "ada-chooses-2026")
    assert page.url.endswith("/logs/")  # an auditor lands on the logs

    # A bad address is refused by name and makes nothing.
    journey.sign_in("pat-pi")
    journey.go("/protocols/OPB-I/members/")
    page.locator("#id_invite-email").fill(
        "someone@nowhere"
    )  # the browser accepts it; the server does not
    journey.click_and_wait(page.get_by_role("button", name="Send invitation"))
    assert page.locator(".has-error, .errors, [role=alert]").first.is_visible()
    assert User.objects.count() == 2
