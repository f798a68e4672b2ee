"""Shared fixtures: people in each role, and the rules for tests that need real services.

Tests marked ``postgres`` need PostgreSQL (triggers, SKIP LOCKED, advisory locks), ``redis`` a
real Redis broker, ``browser`` Debian's Chromium. Without the service they are skipped with the
reason; under ``CI=true`` a skip of a marked test fails the run instead, so CI cannot pass by
quietly not testing what only the real service can show.
"""

import copy
import os
import shutil
from pathlib import Path
from typing import Any

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


# Before pytest-django's (also tryfirst): its stable sort then puts transactional tests last.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Order and group the run for pytest-xdist (``make test``: ``-n auto --dist loadgroup``).

    - The tests that start a real Celery worker share one broker and its queue: they run on one
      xdist worker (``xdist_group("redis")``), one after another, so no worker takes another's
      task. (PostgreSQL needs nothing: pytest-django gives each xdist worker its own test
      database, ``test_<name>_gw<n>``.)
    - A module with a test marked ``slow`` runs whole on one xdist worker, so the state it builds
      once (a module-scoped fixture) is built once, and such modules come first: the long tests
      start while the short ones fill the other cores, instead of ending the run alone.
    """
    slow_modules = {item.path for item in items if item.get_closest_marker("slow")}
    for item in items:
        _time_for_the_state_build(item)
        if item.get_closest_marker("redis"):
            item.add_marker(pytest.mark.xdist_group("redis"))
        elif item.path in slow_modules:
            item.add_marker(pytest.mark.xdist_group(f"slow:{item.path.name}"))
    items.sort(key=lambda item: item.path not in slow_modules)


# The first test of an xdist worker that asks for the demo's copy pays for building the demo
# (tests/states.py): a minute on a quiet machine, more than the suite's 300 s at a load of 15.
STATE_BUILD_TIMEOUT = 1200


def _time_for_the_state_build(item) -> None:
    if "state_databases" not in getattr(item, "fixturenames", ()):
        return
    marker = item.get_closest_marker("timeout")
    given = marker.args[0] if marker and marker.args else item.config.getini("timeout")
    if float(given or 0) < STATE_BUILD_TIMEOUT:
        item.add_marker(pytest.mark.timeout(STATE_BUILD_TIMEOUT), append=False)


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


# Read-only states built once per session and copied per module (tests/states.py).


@pytest.fixture(scope="session")
def state_databases(django_db_setup, django_db_blocker):
    from tests.states import StateDatabases

    databases = StateDatabases(django_db_blocker)
    yield databases
    databases.close()


@pytest.fixture(scope="module")
def demo_database(state_databases):
    """The module's own copy of the loaded demo (built once per session and xdist worker);
    each test's writes are rolled back as usual, and the copy is dropped after the module."""
    from tests.states import demo_build

    with state_databases.cloned("demo", demo_build):
        yield


# The computability gate's verdicts, kept across tests as production keeps them (issue #30).
#
# Production caches a verdict under the SHA-256 of the draft's canonical document and the
# pipeline's name (``apps.analysis.computability.version_computability``), for a week. Every
# test empties Django's cache (below), and with it those verdicts: the ~120 analysis tests that
# freeze the same builder's study (same codes, same parameters, so the same document) ran the
# plan on synthetic data each time. Here the gate reads and writes a store of its own that lives
# for the test session, instead of Django's cache.
#
# Why that is safe: the canonical document holds everything the gate reads (the design, the
# roster, the rubric, the parameters and the decision table, by natural keys only, never a
# database id), so within one process two drafts with the same document get the same verdict as
# long as the code that computes it is the same. So the store is kept per state of the code:
# - a test that may change that code uses Django's cache, emptied, as before: it patches
#   something (``monkeypatch``, ``mocker``, ``caplog``, or its module mentions ``mock``) or its
#   module registers pipelines or empties the cache itself (the gate's own tests);
# - the verdicts are filed under the registered pipelines, declarations, plan templates and
#   components (by identity): after a test that left a registration behind, later tests fill
#   another bucket; a test during which they changed keeps nothing.
# ``PREREGISTRY_GATE_CACHE_CHECK=1`` proves it on a run: every verdict found in the session's
# store is computed again, and a test whose fresh verdict differs fails, naming the key.

_GATE_VERDICTS: dict[tuple, dict[str, Any]] = {}
_PATCHING_FIXTURES = {"monkeypatch", "mocker", "caplog"}
_PATCHING_WORDS = ("mock", "register_pipeline", "unregister_pipeline", "cache.clear")
_GATE_CHECK = os.environ.get("PREREGISTRY_GATE_CACHE_CHECK") == "1"
_module_patches: dict[str, bool] = {}
_registered: dict[int, object] = {}  # every object ever registered, kept alive: ids stay unique


class GateVerdicts:
    """What ``apps.analysis.computability`` sees as ``cache`` during a test that may share: the
    verdicts kept for this state of the code, under the test's own. ``get`` and ``set`` copy, as
    a real cache does (a caller may change the verdict it got)."""

    def __init__(self, kept: dict[str, Any]) -> None:
        self.kept = kept
        self.own: dict[str, Any] = {}
        self.mismatches: list[str] = []

    def get(self, key: str, default: Any = None) -> Any:
        if key in self.own:
            return copy.deepcopy(self.own[key])
        if not _GATE_CHECK and key in self.kept:
            return copy.deepcopy(self.kept[key])
        return default

    def set(self, key: str, value: Any, timeout: Any = None) -> None:
        if key in self.kept and self.kept[key] != value:
            self.mismatches.append(f"{key}: kept {self.kept[key]!r}, computed {value!r}")
        self.own[key] = copy.deepcopy(value)

    def keep(self) -> None:
        for key, value in self.own.items():
            self.kept.setdefault(key, value)


def _code_state() -> tuple:
    """What is registered, by identity: pipelines, declarations, plan templates, components,
    rubric presets."""
    from apps.analysis.pipelines import base
    from apps.protocols import components, plans
    from apps.raters import rubric_templates

    registries = (base._pipelines, plans._declarations, plans.PLAN_TEMPLATES)
    registries += (components._components, rubric_templates._templates)
    _registered.update((id(v), v) for r in registries for v in r.values())
    return tuple(tuple(sorted((k, id(v)) for k, v in r.items())) for r in registries)


def _gate_verdicts_shared(request) -> bool:
    if _PATCHING_FIXTURES & set(request.fixturenames):
        return False
    path = str(request.node.path)
    if path not in _module_patches:
        source = Path(path).read_text()
        _module_patches[path] = any(word in source for word in _PATCHING_WORDS)
    return not _module_patches[path]


@pytest.fixture(autouse=True)
def _fresh_process_caches(request):
    """Per-process caches keyed by database ids (frozen versions, API tokens) start empty in
    every test: a rolled-back test's ids may be reused by the next one (SQLite). So does
    Django's cache (in-process in tests). The computability gate's verdicts, keyed by the
    document's hash and free of ids, are kept across tests (``GateVerdicts``, above)."""
    from django.core.cache import cache

    from apps.accounts.authentication import token_cache_forget
    from apps.analysis import computability
    from apps.raters.frozen import frozen_rating_clear

    frozen_rating_clear()
    token_cache_forget()
    cache.clear()
    if not _gate_verdicts_shared(request):
        yield  # the gate uses Django's cache, emptied above, as before
        return
    state = _code_state()
    verdicts = GateVerdicts(_GATE_VERDICTS.setdefault(state, {}))
    computability.cache = verdicts
    yield
    computability.cache = cache
    if _code_state() == state:
        verdicts.keep()
    assert not verdicts.mismatches, "a kept gate verdict differs from a fresh one: " + "; ".join(
        verdicts.mismatches
    )


@pytest.fixture(autouse=True)
def _signer_state_per_test(settings, tmp_path_factory):
    """The checkpoint signer's state (its last signed tree per log, kept outside the database)
    is the test's own: the database is rolled back after each test, the signer's files not."""
    settings.LOG_SIGNING_STATE_DIR = str(tmp_path_factory.mktemp("signer-state"))
