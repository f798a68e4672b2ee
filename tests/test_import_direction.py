"""The apps import one way only (``tests/import_direction.py``, docs/architecture.md)."""

import pytest

from tests.import_direction import violations


def test_no_app_imports_a_later_app_apart_from_writes_to_the_deviation_log():
    assert violations() == []


def test_the_check_catches_an_earlier_app_importing_a_later_one(tmp_path):
    (tmp_path / "responses").mkdir()
    (tmp_path / "responses" / "views.py").write_text(
        "from apps.deviations.services import deviation_append\n"
        "from apps.items.models import Item\n"
        "def f():\n    from apps.raters.selectors import task_for\n"
    )
    assert violations(tmp_path) == [
        "apps/responses/views.py:4: apps.responses imports apps.raters.selectors.task_for "
        "(a later app)"
    ]


def test_an_app_missing_from_the_layers_is_an_error(tmp_path):
    (tmp_path / "newapp").mkdir()
    (tmp_path / "newapp" / "models.py").write_text("")
    with pytest.raises(ValueError, match="newapp"):
        violations(tmp_path)


def test_deviations_sits_right_after_protocols(tmp_path):
    # Later apps read the log (the outcome seal) directly; protocols may only write to it.
    (tmp_path / "responses").mkdir()
    (tmp_path / "responses" / "services.py").write_text(
        "from apps.deviations.selectors import protocol_outcomes_visible\n"
    )
    (tmp_path / "protocols").mkdir()
    (tmp_path / "protocols" / "services.py").write_text(
        "from apps.deviations.services import deviation_append\n"
        "from apps.deviations.selectors import outcomes_visible\n"
    )
    (tmp_path / "deviations").mkdir()
    (tmp_path / "deviations" / "views.py").write_text("from apps.items.models import Item\n")
    assert violations(tmp_path) == [
        "apps/deviations/views.py:1: apps.deviations imports apps.items.models.Item (a later app)",
        "apps/protocols/services.py:2: apps.protocols imports "
        "apps.deviations.selectors.outcomes_visible (a later app)",
    ]


def test_only_protocols_may_write_to_the_log_from_before_it(tmp_path):
    (tmp_path / "accounts").mkdir()
    (tmp_path / "accounts" / "services.py").write_text(
        "from apps.deviations.services import deviation_append\n"
    )
    (tmp_path / "protocols").mkdir()
    (tmp_path / "protocols" / "apps.py").write_text(
        "from apps.deviations.refs import register_ref_type\n"
    )
    assert violations(tmp_path) == [
        "apps/accounts/services.py:1: apps.accounts imports "
        "apps.deviations.services.deviation_append (a later app)"
    ]
