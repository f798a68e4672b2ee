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
    # A version needs its author to pass full_clean (the freeze runs it).
    created_by = factory.SelfAttribute("protocol.created_by")


# Design (apps.items)


class LevelFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "items.Level"

    version = factory.SubFactory(ProtocolVersionFactory)
    ordinal = factory.Sequence(lambda n: n % 6)
    code = factory.LazyAttribute(lambda o: f"L{o.ordinal}")
    name = factory.LazyAttribute(lambda o: f"level {o.ordinal}")


class FamilyFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "items.Family"

    version = factory.SubFactory(ProtocolVersionFactory)
    code = factory.Sequence(lambda n: f"F{n}")
    name = factory.LazyAttribute(lambda o: f"Family {o.code}")
    role = "harm_constant"


class ConditionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "items.Condition"

    version = factory.SubFactory(ProtocolVersionFactory)
    code = factory.Sequence(lambda n: f"C{n}")
    name = factory.LazyAttribute(lambda o: f"Condition {o.code}")


class ItemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "items.Item"

    family = factory.SubFactory(FamilyFactory)
    version = factory.SelfAttribute("family.version")
    code = factory.Sequence(lambda n: f"item-{n}")
    domain = "alt text"


class CellFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "items.Cell"

    item = factory.SubFactory(ItemFactory)
    version = factory.SelfAttribute("item.version")
    level = factory.SubFactory(LevelFactory, version=factory.SelfAttribute("..version"), ordinal=0)
    prompt = factory.Sequence(lambda n: f"Describe thing {n}.")


class KeyUnitFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "items.KeyUnit"

    cell = factory.SubFactory(CellFactory)
    version = factory.SelfAttribute("cell.version")
    position = factory.Sequence(lambda n: n + 1)
    text = factory.Sequence(lambda n: f"required unit {n}")


# Responses (apps.responses)


class EvaluandFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "responses.Evaluand"

    label = factory.Sequence(lambda n: f"model-{n}")
    model = factory.LazyAttribute(lambda o: o.label)
    identity_sha256 = factory.Sequence(lambda n: f"{n:064x}")


class AdministrationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "responses.Administration"

    cell = factory.SubFactory(CellFactory)
    version = factory.SelfAttribute("cell.version")
    evaluand = factory.SubFactory(EvaluandFactory)
    position = factory.Sequence(lambda n: n)
    repetition = 1


class AttemptFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "responses.Attempt"

    administration = factory.SubFactory(AdministrationFactory)
    version = factory.SelfAttribute("administration.version")
    number = 1
    terminal_outcome = "completed"


class ResponseFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "responses.Response"

    attempt = factory.SubFactory(AttemptFactory)
    version = factory.SelfAttribute("attempt.version")
    text = factory.Sequence(lambda n: f"A response, number {n}.")
    word_count = factory.LazyAttribute(lambda o: len(o.text.split()))


class RosterEntryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "responses.RosterEntry"

    version = factory.SubFactory(ProtocolVersionFactory)
    evaluand = factory.SubFactory(EvaluandFactory)
    code = factory.Sequence(lambda n: f"ev{n}")
    position = factory.Sequence(lambda n: n)


class AnalysisParameterFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "protocols.AnalysisParameter"

    version = factory.SubFactory(ProtocolVersionFactory)
    name = factory.Sequence(lambda n: f"parameter_{n}")
    label = factory.LazyAttribute(lambda o: o.name.replace("_", " "))
    kind = "integer"
    value = "1"


class FactorFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "items.Factor"

    version = factory.SubFactory(ProtocolVersionFactory)
    name = factory.Sequence(lambda n: f"factor_{n}")
    label = factory.LazyAttribute(lambda o: o.name.replace("_", " "))
    levels = factory.LazyFunction(lambda: ["a", "b"])
    role = "design"
