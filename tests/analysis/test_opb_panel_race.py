"""A double submit of the same panel member or the same flag (OPB-01 §6.1): one is kept and the
other refused naming the field, never an IntegrityError (a 500). Both submits pass the
``exists()`` check before either commits; PostgreSQL, two threads."""

import threading
import time

import pytest
from django.core.exceptions import ValidationError
from django.db import connection, transaction

from apps.items.models import PanelFlag, PanelMember
from apps.studies.opb.panel import panel_flag_record, panel_member_add
from tests.factories import opb_study

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _race(write) -> dict:
    first_wrote = threading.Event()
    outcomes: dict[str, object] = {}

    def run(name: str):
        if name == "second":
            first_wrote.wait(timeout=30)
        try:
            with transaction.atomic():
                write()
                if name == "first":
                    first_wrote.set()
                    time.sleep(1.5)  # the second submit checks, and waits, before this commits
            outcomes[name] = "recorded"
        except Exception as error:  # reported by the test
            outcomes[name] = error
        finally:
            first_wrote.set()
            connection.close()

    threads = [threading.Thread(target=run, args=(name,)) for name in ("first", "second")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return outcomes


def test_a_concurrent_second_panel_member_and_flag_are_refused_naming_the_field():
    study = opb_study(code="PRACE", evaluands=1, parameters={"interval_method": "analytic"})
    version, pi = study.version, study.pi

    outcomes = _race(lambda: panel_member_add(version=version, actor=pi, code="p-01"))
    assert outcomes["first"] == "recorded"
    assert isinstance(outcomes["second"], ValidationError), outcomes["second"]
    assert "already a panel member p-01" in str(outcomes["second"])
    assert PanelMember.objects.filter(version=version).count() == 1

    member = PanelMember.objects.get(version=version)
    outcomes = _race(
        lambda: panel_flag_record(
            version=version, actor=pi, member=member, item_code="A01", flagged=True
        )
    )
    assert outcomes["first"] == "recorded"
    assert isinstance(outcomes["second"], ValidationError), outcomes["second"]
    assert "already recorded item A01" in str(outcomes["second"])
    assert PanelFlag.objects.filter(member=member).count() == 1
