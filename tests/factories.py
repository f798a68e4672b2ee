"""factory_boy factories for test data."""

import factory

from apps.accounts.models import Membership, User
from apps.protocols.models import Protocol, ProtocolVersion


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password("pass-for-tests")


class ProtocolFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Protocol

    code = factory.Sequence(lambda n: f"P-{n:03d}")
    title = factory.Sequence(lambda n: f"Protocol {n}")
    created_by = factory.SubFactory(UserFactory)


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    user = factory.SubFactory(UserFactory)
    protocol = factory.SubFactory(ProtocolFactory)
    role = "pi"


class ProtocolVersionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ProtocolVersion

    protocol = factory.SubFactory(ProtocolFactory)
    label = "1.0"


class FrozenVersionFactory(ProtocolVersionFactory):
    """A frozen version (created frozen: the freeze itself is the protocols app's service)."""

    state = "frozen"
