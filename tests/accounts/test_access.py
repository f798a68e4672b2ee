"""Per-protocol roles: who may reach what, and who must not even learn a protocol exists."""

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.http import Http404

from apps.protocols.access import get_protocol_for
from tests.factories import MembershipFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("person", "roles", "outcome"),
    [
        ("pi", {"pi"}, "ok"),
        ("editor", {"pi", "editor"}, "ok"),
        ("editor", {"pi"}, PermissionDenied),
        ("auditor", {"auditor"}, "ok"),
        ("auditor", {"pi", "editor"}, PermissionDenied),
        ("reviewer", {"pi", "editor", "auditor"}, Http404),
        ("reviewer", {"reviewer"}, "ok"),
        ("outsider", {"pi", "editor", "auditor", "reviewer"}, Http404),
    ],
)
def test_get_protocol_for_applies_the_role_matrix(request, protocol, person, roles, outcome):
    user = request.getfixturevalue(person)
    if outcome == "ok":
        assert get_protocol_for(user=user, pk=protocol.pk, roles=roles) == protocol
    else:
        with pytest.raises(outcome):
            get_protocol_for(user=user, pk=protocol.pk, roles=roles)


def test_get_protocol_for_accepts_the_code(pi, protocol):
    assert get_protocol_for(user=pi, pk=protocol.code, roles={"pi"}) == protocol


def test_a_reviewer_who_is_also_pi_elsewhere_is_still_blind_here(reviewer, protocol):
    MembershipFactory(user=reviewer, role="pi")  # PI of another protocol
    with pytest.raises(Http404):
        get_protocol_for(user=reviewer, pk=protocol.pk, roles={"pi", "auditor"})


def test_unknown_protocol_is_404(pi):
    with pytest.raises(Http404):
        get_protocol_for(user=pi, pk=999_999, roles={"pi"})


def test_roles_held_twice_and_an_anonymous_caller_in_the_one_query(pi, protocol):
    """The protocol and the caller's roles come in one query (one row per role held)."""
    MembershipFactory(user=pi, protocol=protocol, role="auditor")
    assert get_protocol_for(user=pi, pk=protocol.pk, roles={"auditor"}) == protocol
    with pytest.raises(Http404):
        get_protocol_for(user=AnonymousUser(), pk=protocol.code, roles={"pi", "auditor"})


@pytest.mark.parametrize(
    ("person", "outcome"),
    [
        ("pi", "ok"),
        ("editor", "ok"),
        ("auditor", PermissionDenied),
        ("reviewer", PermissionDenied),
        ("outsider", PermissionDenied),
    ],
)
def test_require_held_roles_refuses_with_its_message_and_never_404(
    request, protocol, person, outcome
):
    from apps.accounts.access import require_held_roles

    user = request.getfixturevalue(person)
    check = {"user": user, "protocol_id": protocol.pk, "roles": {"pi", "editor"}, "refusal": "no."}
    if outcome == "ok":
        assert person in require_held_roles(**check)
    else:
        with pytest.raises(PermissionDenied, match=r"^no\.$"):
            require_held_roles(**check)
