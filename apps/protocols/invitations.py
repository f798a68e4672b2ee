"""The invitation e-mail: a link with which an invited person sets their password (Django's
password-reset token, so it works once and expires after PASSWORD_RESET_TIMEOUT), or, for
someone who has one already, word of the new role."""

from django.contrib.auth.tokens import default_token_generator
from django.core.mail import send_mail
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from apps.accounts.models import Membership


def invitation_send(*, membership: Membership, base_url: str) -> str:
    """Send ``membership``'s person the invitation; return the link it holds.

    ``base_url`` is the site's scheme and host (``request.build_absolute_uri("/")``). Uses
    the configured e-mail backend (the console in development); raises what it raises.
    """
    user = membership.user
    protocol = membership.protocol
    if user.has_usable_password():
        link = base_url.rstrip("/") + reverse("accounts:login")
        action = f"Sign in as {user.get_username()} to start:\n{link}"
    else:
        uid = urlsafe_base64_encode(force_bytes(user.pk))
        token = default_token_generator.make_token(user)
        path = reverse("accounts:password-reset-confirm", args=[uid, token])
        link = base_url.rstrip("/") + path
        action = (
            f"Your account is {user.get_username()}. Set its password here (the link works "
            f"once, for a limited time):\n{link}"
        )
    send_mail(
        subject=f"You are {membership.get_role_display()} on {protocol.code} in Preregistry",
        message=f"You have been given the role {membership.get_role_display()} on "
        f"{protocol.code} ({protocol.title}).\n\n{action}\n",
        from_email=None,
        recipient_list=[user.email],
    )
    return link
