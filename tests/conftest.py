"""Shared fixtures: people in each role, and the rules for tests that need real services.

Tests marked ``postgres`` need PostgreSQL (triggers, SKIP LOCKED, advisory locks), ``redis`` a
real Redis broker, ``browser`` Debian's Chromium. Without the service they are skipped with the
reason; under ``CI=true`` a skip of a marked test fails the run instead, so CI cannot pass by
quietly not testing what only the real service can show.
"""

import os
import shutil
from pathlib import Path

import pytest
from django.conf import settings

from tests.factories import MembershipFactory, ProtocolFactory, UserFactory

IN_CI = os.environ.get("CI", "").lower() == "true"


def _skip_or_fail(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"CI=true and a marked test cannot run: {reason}", pytrace=False)
    pytest.skip(reason)


def _redis_answers() -> bool:
    if not settings.REDIS_URL:
        return False
    import redis

    try:
        return bool(redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(autouse=True)
def _require_marked_services(request):
    if request.node.get_closest_marker("postgres"):
        from django.db import connection

        if connection.vendor != "postgresql":
            _skip_or_fail("needs PostgreSQL: set DATABASE_URL=postgres://…")
    if request.node.get_closest_marker("redis") and not _redis_answers():
        _skip_or_fail("needs Redis: set REDIS_URL=redis://127.0.0.1:6379/0 with Redis running")
    if request.node.get_closest_marker("browser") and not chromium_path():
        _skip_or_fail("needs Debian's chromium (apt-get install chromium chromium-driver)")


@pytest.fixture
def shared_data() -> Path:
    """The read-only shared data folder (``../shared/data``); skips when it is absent."""
    folder = Path(settings.SHARED_DATA_DIR)
    if not folder.is_dir():
        pytest.skip(f"shared data folder {folder} is absent (set PREREGISTRY_SHARED_DATA)")
    return folder


# People: one per role on one protocol, and an outsider with no role on it.


@pytest.fixture
def protocol(db):
    return ProtocolFactory()


def _member(protocol, role):
    return MembershipFactory(protocol=protocol, role=role).user


@pytest.fixture
def pi(protocol):
    return _member(protocol, "pi")


@pytest.fixture
def editor(protocol):
    return _member(protocol, "editor")


@pytest.fixture
def reviewer(protocol):
    return _member(protocol, "reviewer")


@pytest.fixture
def auditor(protocol):
    return _member(protocol, "auditor")


@pytest.fixture
def outsider(db):
    return UserFactory()


# The database roles: the test database is made by the owner, the tests run as the runtime role
# (tests/dbroles.py).


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix):
    from tests import dbroles

    dbroles.before_setup()


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    from tests import dbroles

    dbroles.after_setup()
    yield
    with django_db_blocker.unblock():
        dbroles.before_teardown()


@pytest.fixture(autouse=True)
def _fresh_process_caches():
    """Per-process caches keyed by database ids (frozen versions, API tokens) start empty in
    every test: a rolled-back test's ids may be reused by the next one (SQLite). So does
    Django's cache (in-process in tests): the computability gate caches its verdict by the
    draft's document hash, and an earlier test's verdict on an identical document made from
    other rows must not decide this test's freeze."""
    from django.core.cache import cache

    from apps.accounts.authentication import token_cache_forget
    from apps.raters.frozen import frozen_rating_clear

    frozen_rating_clear()
    token_cache_forget()
    cache.clear()
    yield


@pytest.fixture(autouse=True)
def _signer_state_per_test(settings, tmp_path_factory):
    """The checkpoint signer's state (its last signed tree per log, kept outside the database)
    is the test's own: the database is rolled back after each test, the signer's files not."""
    settings.LOG_SIGNING_STATE_DIR = str(tmp_path_factory.mktemp("signer-state"))
