"""Two requests writing the same unique thing at once (a double submit, two people choosing one
code): the later INSERT waits on the unique index, then fails. It is answered 409 naming what
is taken, never a 500 (an IntegrityError), and the first request's row is the one kept.
(``apps.core.dbguards.unique_violation_message``, answered by the API's exception handler and
the pages' ``DomainErrorMiddleware``.)"""

import threading
import time

import pytest
from django.db import connection, transaction
from django.test import Client

from apps.protocols.models import Protocol
from apps.protocols.services import protocol_create
from tests.factories import UserFactory

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _while_first_holds(first, second):
    """Run ``first`` in a transaction that stays open 1.5 s after it wrote, and ``second``
    meanwhile (it passes every check, then waits on the index); ``second``'s answer."""
    wrote = threading.Event()
    out: dict[str, object] = {}

    def hold():
        try:
            with transaction.atomic():
                first()
                wrote.set()
                time.sleep(1.5)
        finally:
            wrote.set()
            connection.close()

    def ask():
        wrote.wait(timeout=30)
        try:
            out["answer"] = second()
        finally:
            connection.close()

    threads = [threading.Thread(target=hold), threading.Thread(target=ask)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return out["answer"]


@pytest.mark.parametrize("where", ["api", "page"])
def test_a_protocol_code_taken_while_the_create_request_ran_is_a_409_naming_the_code(where):
    first_pi, second_pi = UserFactory(), UserFactory()
    client = Client(raise_request_exception=False)
    client.force_login(second_pi)

    def second():
        if where == "api":
            return client.post(
                "/api/v1/protocols",
                {"code": "RACE-1", "title": "Second", "template": "generic"},
                content_type="application/json",
            )
        return client.post(
            "/protocols/new/", {"code": "RACE-1", "title": "Second", "template": "generic"}
        )

    response = _while_first_holds(
        lambda: protocol_create(user=first_pi, code="RACE-1", title="First", template="generic"),
        second,
    )
    # The API's own check may already see the first row (400, naming the field); what the
    # second request may never get is a 500.
    assert response.status_code in (400, 409), response.content[:500]
    text = response.content.decode()
    if response.status_code == 400:
        assert "already exists" in text
    else:
        assert "RACE-1" in text and "another request" in text
    assert list(Protocol.objects.values_list("title", flat=True)) == ["First"]


class _Diag:
    def __init__(self, detail):
        self.message_detail = detail


class _Cause(Exception):
    def __init__(self, sqlstate, detail):
        self.sqlstate, self.diag = sqlstate, _Diag(detail)


def _raised(sqlstate, detail):
    from django.db import IntegrityError

    try:
        try:
            raise _Cause(sqlstate, detail)
        except _Cause as cause:
            raise IntegrityError("duplicate key") from cause
    except IntegrityError as error:
        return error


@pytest.mark.django_db(transaction=False)
def test_the_race_message_names_columns_and_values_but_never_a_database_id():
    from apps.core.dbguards import unique_violation_message

    named = unique_violation_message(_raised("23505", "Key (code)=(RACE-1) already exists."))
    assert named.startswith("code 'RACE-1' was saved by another request")
    ids = unique_violation_message(
        _raised("23505", "Key (version_id, code)=(41, A-1) already exists.")
    )
    assert "version_id, code" in ids and "41" not in ids
    assert unique_violation_message(_raised("23503", "Key (x)=(1) is not present.")) is None
