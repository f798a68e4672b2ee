"""The ``cluster`` marker's session: a multi-node deployment (apps/core/cluster.py) of its own.

Started once per session on free ports, against the test database that pytest-django created and
migrated (as the owner; the nodes and workers connect through PgBouncer as the runtime role), and
stopped at the end. The test process writes its studies straight into that database (the
factories, in transactional tests: committed at once, emptied after each test) and speaks to
the nodes over HTTP, one node at a time (``node_url``) or through HAProxy (``url``).

The workers run ``tests.analysis.blocking_worker`` (the project's Celery app plus a pipeline that
blocks while a file exists), so that a worker can be killed mid-analysis.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
from django.conf import settings
from django.db import connection

from apps.core.cluster import Cluster, free_port
from config.celery import app
from tests.conftest import _redis_answers, _skip_or_fail

# A sign-in lockout after this many wrong passwords (the deployed default is 10).
FAILURE_LIMIT = 4
# Anonymous API requests a minute per address (the deployed default is 120).
ANON_RATE = 6


@dataclass
class Running:
    cluster: Cluster
    gate: Path


def _runtime_url() -> str:
    s = connection.settings_dict
    password = f":{s['PASSWORD']}" if s.get("PASSWORD") else ""
    host = s["HOST"] or "127.0.0.1"
    return f"postgres://{s['USER']}{password}@{host}:{s['PORT'] or 5432}/{s['NAME']}"


@contextmanager
def started(django_db_blocker, run_dir: Path) -> Iterator[Running]:
    """A cluster started in ``run_dir`` for as long as the ``with`` block lasts, then stopped,
    with the session's Celery app put back to its settings (while it runs, the app sends tasks
    to the cluster's workers through the session's Redis, and nothing else may be listening)."""
    if connection.vendor != "postgresql":
        _skip_or_fail("the cluster needs PostgreSQL: set DATABASE_URL=postgres://…")
    if not _redis_answers():
        _skip_or_fail("the cluster needs Redis: set REDIS_URL=redis://…")
    gate = run_dir / "analysis-gate"
    with django_db_blocker.unblock():
        cluster = Cluster(
            run_dir=run_dir,
            database_url=_runtime_url(),
            http_port=free_port(),
            node_ports=(free_port(), free_port()),
            pgbouncer_port=free_port(),
            stats_port=free_port(),
            # The session's Redis (the test process enqueues analysis runs on it).
            redis_url=settings.REDIS_URL,
            celery_app="tests.analysis.blocking_worker",
            extra_env={
                "AXES_FAILURE_LIMIT": str(FAILURE_LIMIT),
                "ANALYSIS_TEST_GATE": str(gate),
                # A killed run is requeued after 3 s without a heartbeat (deployed: 30 s).
                "ANALYSIS_HEARTBEAT_TIMEOUT_SECONDS": "3",
                "ANALYSIS_HEARTBEAT_INTERVAL_SECONDS": "1",
                "API_THROTTLE_USER": "100000/minute",
                "API_THROTTLE_ANON": f"{ANON_RATE}/minute",
                "PREREGISTRY_ENFORCE_DB_ROLE": "true",
            },
        )
        app.conf.task_always_eager = False
        app.control.purge()
        try:
            cluster.start(migrate=False)
            yield Running(cluster, gate)
        finally:
            cluster.stop()
            _forget_unacknowledged()
            app.conf.task_always_eager = settings.CELERY_TASK_ALWAYS_EAGER
            # The nodes' sessions in the session's Redis die with the test database.
            connection.close()


@pytest.fixture(scope="session")
def running(django_db_setup, django_db_blocker, tmp_path_factory):
    """The ``cluster`` marker's cluster, for the whole session (``tests/cluster`` runs alone)."""
    with started(django_db_blocker, tmp_path_factory.mktemp("cluster")) as cluster:
        yield cluster


def _forget_unacknowledged() -> None:
    # A killed worker's message waits in the transport's "unacked" hash for the visibility
    # timeout and would be redelivered to a later session's database (tests/analysis).
    with app.connection_for_write() as conn:
        conn.default_channel.client.delete("unacked", "unacked_index")
    app.control.purge()


@pytest.fixture
def cluster(running) -> Cluster:
    """The running cluster; a test that stops one of its processes starts it again."""
    cluster = running.cluster
    yield cluster
    for name, alive in cluster.status().items():
        if not alive and name in cluster.commands():
            cluster.spawn(name)


class Http:
    """A client of one address that keeps its cookies whatever their ``Secure`` flag (the
    cluster speaks plain HTTP on the loopback; production settings mark cookies secure) and,
    given ``source``, connects from that loopback address (sign-in lockouts count addresses)."""

    def __init__(self, base: str, *, token: str | None = None, source: str | None = None):
        self.base = base
        self.session = requests.Session()
        self.cookies: dict[str, str] = {}
        if token:
            self.session.headers["Authorization"] = f"Token {token}"
        if source:
            adapter = _SourceAdapter(source)
            self.session.mount("http://", adapter)

    def request(self, method: str, path: str, **kwargs) -> requests.Response:
        kwargs.setdefault("timeout", 60)
        kwargs.setdefault("allow_redirects", False)
        answer = self.session.request(method, self.base + path, cookies=self.cookies, **kwargs)
        self.cookies.update(answer.cookies.get_dict())
        return answer

    def get(self, path: str, **kwargs) -> requests.Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs) -> requests.Response:
        if "data" in kwargs or "files" in kwargs:
            csrf = self.cookies.get("csrftoken")
            if csrf:
                kwargs.setdefault("headers", {})["X-CSRFToken"] = csrf
        return self.request("POST", path, **kwargs)

    def sign_in(self, username: str, password: str) -> requests.Response:
        self.get("/login/")
        return self.post(
            "/login/",
            data={
                "username": username,
                "password": password,
                "csrfmiddlewaretoken": self.cookies.get("csrftoken", ""),
            },
        )


class _SourceAdapter(requests.adapters.HTTPAdapter):
    def __init__(self, source: str):
        self.source = source
        super().__init__()

    def init_poolmanager(self, *args, **kwargs):
        kwargs["source_address"] = (self.source, 0)
        super().init_poolmanager(*args, **kwargs)
