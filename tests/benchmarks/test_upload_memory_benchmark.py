"""Peak memory of a web worker importing a ~50 MB CSV through the pages (preview, then confirm).

    BENCH_ITEMS=12500 DATABASE_URL=postgres://postgres@127.0.0.1:5432/prereg_<you> \\
        .venv/bin/python -m pytest \\
        tests/benchmarks/test_upload_memory_benchmark.py -p no:randomly -s -o addopts=""

A real gunicorn worker (one process, port ``BENCH_PORT``, default 18401) serves the test
database; the upload goes over HTTP with ``requests``, so only the server's copies of the file
count. A thread samples the worker's RSS every 20 ms; the figure is the peak during the upload
and the confirmation, against the worker's RSS after a warm-up request. Target (issue #18):
≤ 300 MB peak for a 50 MB file; reported, not asserted. Figures go to docs/performance.md.
"""

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
import requests
from django.db import connection

from apps.responses.models import Attempt
from tests.benchmarks.test_import_benchmark import EVALUANDS, ITEMS, REPETITIONS, _file
from tests.benchmarks.test_import_benchmark import _frozen_version as frozen_version

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

ROOT = Path(__file__).resolve().parents[2]
PORT = int(os.environ.get("BENCH_PORT", "18401"))
TARGET_MB = 300


def _server(database_url: str) -> subprocess.Popen:
    env = os.environ | {
        "DATABASE_URL": database_url,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "PREREGISTRY_UPLOAD_MAX_MB": "60",
    }
    env.pop("REDIS_URL", None)
    command = [sys.executable, "-m", "gunicorn", "config.wsgi", "-b", f"127.0.0.1:{PORT}"]
    return subprocess.Popen(
        [*command, "-w", "1", "--timeout", "600"],
        cwd=ROOT,
        env=env,
    )


def _worker_rss(server: subprocess.Popen) -> int:
    children = psutil.Process(server.pid).children()
    return sum(c.memory_info().rss for c in children)


@pytest.mark.timeout(1800)
def test_a_50_mb_csv_through_the_pages(protocol, pi):
    version = frozen_version(protocol, pi)
    data = _file()
    settings_dict = connection.settings_dict
    url = f"postgres://{settings_dict['USER']}@{settings_dict['HOST']}:{settings_dict['PORT']}/"
    server = _server(url + settings_dict["NAME"])
    base = f"http://127.0.0.1:{PORT}"
    page = f"{base}/protocols/{protocol.code}/v/{version.label}/responses/import/"
    try:
        session = requests.Session()
        for _ in range(300):  # a busy machine takes a while to boot the worker
            try:
                session.get(f"{base}/login/", timeout=60)
                break
            except requests.RequestException:
                time.sleep(0.5)
        token = session.cookies["csrftoken"]
        signed_in = session.post(
            f"{base}/login/",
            {"username": pi.username, "password": "pass-for-tests", "csrfmiddlewaretoken": token},
            allow_redirects=False,
        )
        assert signed_in.status_code == 302
        session.get(page)  # warm-up: the import pages' code is loaded
        baseline = _worker_rss(server)
        peak = [baseline]
        running = True

        def sample() -> None:
            while running:
                peak[0] = max(peak[0], _worker_rss(server))
                time.sleep(0.02)

        sampler = threading.Thread(target=sample)
        sampler.start()
        started = time.perf_counter()
        token = session.cookies["csrftoken"]
        preview = session.post(
            page,
            data={"csrfmiddlewaretoken": token, "format": "", "mapping": ""},
            files={"file": ("bench.csv", data, "text/csv")},
        )
        assert preview.status_code == 200 and "Ready to import" in preview.text, preview.text[:500]
        fields = dict(re.findall(r'name="(\w+)" value="([^"]*)"', preview.text))
        confirm = session.post(page + "confirm/", data=fields)
        seconds = time.perf_counter() - started
        running = False
        sampler.join()
        assert confirm.status_code == 200
        rows = ITEMS * EVALUANDS * REPETITIONS
        assert Attempt.objects.filter(version=version).count() == rows
        growth = (peak[0] - baseline) / 2**20
        print(
            f"\n{len(data) / 1e6:.1f} MB CSV ({rows:,} rows), preview + confirm over HTTP in "
            f"{seconds:.1f} s; worker RSS {baseline / 2**20:.0f} MB before, peak "
            f"{peak[0] / 2**20:.0f} MB (+{growth:.0f} MB); target ≤ {TARGET_MB} MB peak "
            f"{'met' if peak[0] / 2**20 <= TARGET_MB else 'NOT met'}; load average "
            f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
        )
    finally:
        server.terminate()
        server.wait(timeout=30)
