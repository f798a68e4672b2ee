"""A bounded schemathesis run over ``/api/schema/``: no operation answers 5xx to the requests
schemathesis generates from the schema (issue #18, deliverable 6).

Every operation gets a few derandomised examples (``API_FUZZ_EXAMPLES``, default 4), sent with a
PI's token through the WSGI application, inside the test's transaction. The run is bounded to
keep CI within a couple of minutes; raise the examples locally for a deeper search:
``API_FUZZ_EXAMPLES=50 .venv/bin/python -m pytest tests/core/test_api_schemathesis.py``.
"""

import os

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, given, settings
from rest_framework.authtoken.models import Token

from apps.accounts.models import Membership
from apps.demo.study import DEMO_CODE
from apps.protocols.models import Protocol

pytestmark = pytest.mark.django_db

EXAMPLES = int(os.environ.get("API_FUZZ_EXAMPLES", "4"))


@pytest.fixture
def connection_kept_open():
    """As Django's test client does: the WSGI handler would otherwise close the test's database
    connection (inside its transaction) after each request."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_no_api_operation_answers_5xx_to_schemathesis(demo_database, connection_kept_open):
    pi = Membership.objects.filter(protocol=Protocol.objects.get(code=DEMO_CODE), role="pi")
    token = Token.objects.get_or_create(user=pi.first().user)[0]
    headers = {"Authorization": f"Token {token.key}"}
    schema = schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application())
    failures: list[str] = []
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            derandomize=True,
            database=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        def call(case) -> None:
            response = case.call(headers=headers)
            if response.status_code >= 500:
                failures.append(
                    f"{case.method} {case.formatted_path} {response.status_code}: "
                    f"{response.text[:200]}"
                )

        call()
    assert operations > 50  # the schema was read, not an empty one
    assert not failures, f"{len(failures)} server errors:\n" + "\n".join(failures[:40])
