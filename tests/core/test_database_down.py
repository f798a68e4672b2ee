"""A database that cannot be reached answers 503, never a 500 (issue #18), seen through a real
server: a gunicorn worker whose DATABASE_URL points at a port where nothing listens, so every
query fails in the driver exactly as it does when PostgreSQL is down. No mock.

The worker is a subprocess of its own (its own settings, its own connection); the test talks to
it over HTTP with ``requests``.
"""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def server_without_database():
    closed = _free_port()  # bound, then released: nothing listens there
    port = _free_port()
    env = os.environ | {
        "DATABASE_URL": f"postgres://nobody@127.0.0.1:{closed}/gone",
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
    }
    env.pop("REDIS_URL", None)
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "config.wsgi", "-b", f"127.0.0.1:{port}", "-w", "1"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):  # a busy machine takes a while to boot the worker
            try:
                requests.get(f"{base}/healthz", timeout=30)
                break
            except requests.ConnectionError:
                if server.poll() is not None:
                    pytest.fail(server.stderr.read().decode()[-2000:])
                time.sleep(0.5)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_an_api_request_with_the_database_down_is_a_json_503(server_without_database):
    # The token makes DRF look the caller up: the first query, and it cannot be answered.
    response = requests.get(
        f"{server_without_database}/api/v1/tasks/progress",
        headers={"Authorization": "Token 0123456789abcdef0123456789abcdef01234567"},
        timeout=60,
    )
    assert response.status_code == 503, response.text[:500]
    assert response.headers["Content-Type"] == "application/json"
    assert "database is unavailable" in response.json()["detail"]
    assert response.headers["Retry-After"] == "30"


def test_a_page_with_the_database_down_is_a_503_page(server_without_database):
    # A session cookie makes the page read the session, from the database.
    response = requests.get(
        f"{server_without_database}/protocols/",
        cookies={"sessionid": "x" * 32},
        timeout=60,
        allow_redirects=False,
    )
    assert response.status_code == 503, response.text[:500]
    assert "The database is unavailable" in response.text
    assert response.headers["Content-Type"].startswith("text/html")


def test_the_health_check_says_the_database_is_down(server_without_database):
    response = requests.get(f"{server_without_database}/healthz", timeout=60)
    assert response.status_code == 503
    assert response.json()["database"]["ok"] is False
