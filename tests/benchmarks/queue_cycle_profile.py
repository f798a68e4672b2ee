"""Where one reviewer-queue cycle's CPU goes, in-process: the WSGI application under production
settings, driven without a network, on a study that ``queue_vs_label_studio.py`` built.

Not a test (pytest does not collect it). A cycle is ``POST /api/v1/tasks/next`` then ``POST
/api/v1/tasks/<token>/score``, as in the side-by-side benchmark. It prints, per cycle:

- Python function calls (``cProfile``): the figure to compare across commits, since unlike CPU
  time it does not move with the machine's load;
- Python CPU time and the PostgreSQL backend's CPU time (both move with the load: on two shared
  cores, CPU time per unit of work grows when the other core is busy);
- the cyclic garbage collector's CPU per cycle (it moves with the load too);
- with ``--trace FILE``, libpq's protocol trace of one more cycle, and the round trips in it;
- with ``--top N``, the N functions with the most own time (``PROFILE_DUMP=file`` keeps the
  profile).

Reproduce (first build the study: the side-by-side script prepares the database
``prereg_queue_bench`` and its roles, and ``--build-app`` prints the version and tokens):

    .venv/bin/python tests/benchmarks/queue_vs_label_studio.py --only-preregistry \\
        --tasks 20000 --k 1 --seconds 5 --single 10
    .venv/bin/python tests/benchmarks/queue_cycle_profile.py --cycles 150 --version 1
"""

import argparse
import cProfile
import gc
import io
import json
import os
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", default="prereg_queue_bench")
    parser.add_argument("--cycles", type=int, default=150)
    parser.add_argument("--top", type=int, default=0, help="print the N costliest functions")
    parser.add_argument("--version", type=int, help="the study's version id (default: newest)")
    parser.add_argument("--reviewer", type=int, default=0, help="which reviewer, in id order")
    parser.add_argument(
        "--trace", type=Path, help="write libpq's protocol trace of one more cycle to this file"
    )
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tests" / "benchmarks"))
    from queue_vs_label_studio import Preregistry

    # The side-by-side benchmark's server environment: production settings, the runtime role.
    os.environ.update(Preregistry(db=args.db, port=0).env())
    import django

    django.setup()
    from django.core.handlers.wsgi import WSGIHandler
    from django.db import connection
    from psycopg.pq import Trace
    from rest_framework.authtoken.models import Token

    from apps.raters.models import ScoringTask

    application = WSGIHandler()
    # One reviewer (with a token) of the chosen study, by id order so that runs compare.
    version_id = (
        args.version
        or (ScoringTask.objects.order_by("-version_id").values_list("version_id", flat=True)[0])
    )
    token = (
        Token.objects.filter(
            user__memberships__protocol__versions__id=version_id,
            user__memberships__role="reviewer",
        )
        .order_by("user_id")
        .values_list("key", flat=True)[args.reviewer]
    )
    label = {"label": "2_full_refusal"}

    def call(method: str, path: str, body: dict) -> tuple[str, bytes]:
        data = json.dumps(body).encode()
        environ = {
            "REQUEST_METHOD": method,
            "PATH_INFO": path,
            "QUERY_STRING": "",
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "8000",
            "HTTP_HOST": "127.0.0.1:8000",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(data),
            "wsgi.errors": sys.stderr,
            "CONTENT_LENGTH": str(len(data)),
            "CONTENT_TYPE": "application/json",
            "HTTP_AUTHORIZATION": f"Token {token}",
        }
        status = {}

        def start_response(line, headers, exc_info=None):
            status["line"] = line

        chunks = application(environ, start_response)
        payload = b"".join(chunks)
        chunks.close()
        return status["line"], payload

    def cycle() -> None:
        line, payload = call("POST", "/api/v1/tasks/next", {})
        if not line.startswith("200") or json.loads(payload)["task"] is None:
            raise SystemExit(f"next answered {line}: {payload[:300]!r}")
        task = json.loads(payload)["task"]["token"]
        body = {"values": label, "idempotency_key": f"p{time.time_ns()}", "seconds_spent": 1}
        line, payload = call("POST", f"/api/v1/tasks/{task}/score", body)
        if not line.startswith("201"):
            raise SystemExit(f"score answered {line}: {payload[:300]!r}")

    def backend_cpu() -> float:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            pid = cursor.fetchone()[0]
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    for _ in range(20):  # warm: connection, prepared statements, caches
        cycle()
    n = args.cycles
    collecting = {"cpu": 0.0, "runs": 0, "since": 0.0}

    def collected(phase: str, info: dict) -> None:
        if phase == "start":
            collecting["since"] = time.process_time()
        else:
            collecting["cpu"] += time.process_time() - collecting["since"]
            collecting["runs"] += 1

    gc.callbacks.append(collected)
    backend, cpu, wall = backend_cpu(), time.process_time(), time.perf_counter()
    for _ in range(n):
        cycle()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    backend = backend_cpu() - backend
    gc.callbacks.remove(collected)
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(n):
        cycle()
    profile.disable()
    stats = pstats.Stats(profile)
    if os.environ.get("PROFILE_DUMP"):
        profile.dump_stats(os.environ["PROFILE_DUMP"])
    result = {
        "cycles": n,
        "python_calls_per_cycle": round(stats.total_calls / n),  # type: ignore[attr-defined]
        "python_cpu_ms_per_cycle": round(cpu * 1000 / n, 2),
        "postgresql_backend_cpu_ms_per_cycle": round(backend * 1000 / n, 2),
        "wall_ms_per_cycle": round(wall * 1000 / n, 2),
        # The cyclic garbage collector's share of the Python CPU (its collections per cycle).
        "gc_cpu_ms_per_cycle": round(collecting["cpu"] * 1000 / n, 3),
        "gc_runs_per_cycle": round(collecting["runs"] / n, 2),
        "load": os.getloadavg(),
    }
    if args.trace:
        # One cycle's messages to the server: each Query (simple protocol) or Sync (extended
        # protocol) is one round trip.
        with args.trace.open("w") as out:
            pgconn = connection.connection.pgconn
            pgconn.trace(out.fileno())
            pgconn.set_trace_flags(Trace.SUPPRESS_TIMESTAMPS | Trace.REGRESS_MODE)
            cycle()
            pgconn.untrace()
        sent = [line.split("\t") for line in args.trace.read_text().splitlines()]
        result["round_trips_per_cycle"] = sum(
            1 for f in sent if len(f) > 2 and f[0] == "F" and f[2] in ("Query", "Sync")
        )
    print(json.dumps(result))
    if args.top:
        stats.sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
