"""Two people recording the same evaluand's fresh-session guarantee at once (a double submit):
one record is kept and the other is refused naming the field, never an IntegrityError (a 500)."""

import threading
import time

import pytest
from django.core.exceptions import ValidationError
from django.db import connection, transaction

from apps.responses.models import SessionGuarantee
from apps.responses.surfaces import session_guarantee_record
from tests.factories import EvaluandFactory, UserFactory

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_a_concurrent_second_record_is_refused_not_an_integrity_error():
    evaluand, first_user, second_user = EvaluandFactory(), UserFactory(), UserFactory()
    first_wrote = threading.Event()
    outcomes: dict[str, object] = {}

    def first():
        try:
            with transaction.atomic():
                session_guarantee_record(evaluand=evaluand, user=first_user, fresh_session="yes")
                first_wrote.set()
                time.sleep(1.5)  # the second writer checks, and waits, before this commits
            outcomes["first"] = "recorded"
        except Exception as error:  # reported below
            outcomes["first"] = error
        finally:
            first_wrote.set()
            connection.close()

    def second():
        first_wrote.wait(timeout=30)
        try:
            with transaction.atomic():
                session_guarantee_record(evaluand=evaluand, user=second_user, fresh_session="no")
            outcomes["second"] = "recorded"
        except Exception as error:  # reported below
            outcomes["second"] = error
        finally:
            connection.close()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert outcomes["first"] == "recorded"
    assert isinstance(outcomes["second"], ValidationError), outcomes["second"]
    assert "already has its fresh-session record" in str(outcomes["second"])
    assert list(SessionGuarantee.objects.values_list("fresh_session", flat=True)) == ["yes"]
