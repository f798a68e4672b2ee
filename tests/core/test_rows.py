"""Rows registered once by their identity hash (``apps.core.rows.identified_get_or_create``): an
evaluand and a machine scorer, the same identity twice, and a registration losing a race."""

import pytest

from apps.raters.models import Scorer
from apps.raters.services.scorers import scorer_register
from apps.responses.models import Evaluand
from apps.responses.services import evaluand_register
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

SCORER = {"kind": "script", "name": "exact-match", "version": "1"}


def test_the_same_identity_registered_twice_is_the_first_row():
    user = UserFactory()
    first, created = evaluand_register(user=user, label="Model A", model="model-a")
    again, created_again = evaluand_register(user=user, label="Other label", model="model-a")
    assert (created, created_again) == (True, False)
    assert again.pk == first.pk and again.label == "Model A"
    scorer, created = scorer_register(user=user, label="", **SCORER)
    assert created and scorer_register(user=user, label="", **SCORER) == (scorer, False)


@pytest.mark.parametrize("model", [Evaluand, Scorer])
def test_a_registration_that_loses_the_race_returns_the_row_saved_first(model, monkeypatch):
    register = {Evaluand: evaluand_register, Scorer: scorer_register}[model]
    identity = {"model": "model-r"} if model is Evaluand else SCORER
    user = UserFactory()
    first, _ = register(user=user, label="First", **identity)
    # As if the other registration committed between this one's lookup and its INSERT: the
    # lookup (and full_clean's uniqueness check) find nothing, the unique index refuses.
    manager = model._default_manager
    monkeypatch.setattr(manager, "filter", lambda *args, **kwargs: manager.none())
    row, created = register(user=user, label="Second", **identity)
    assert (row.pk, created) == (first.pk, False)
    assert model.objects.count() == 1
