"""Side by side: Preregistry's reviewer queue against Label Studio's, on this machine.

Not a test (pytest does not collect it) and not part of the project's dependencies: Label Studio
is installed into a throw-away virtualenv of its own (``--ls-venv``, default /work/lsvenv).

What it does, per round (one round per number of tasks × k):

1. builds the same tasks in both systems — task text ``prompt <i>: lorem ipsum…`` — with k
   scores wanted per task (Label Studio's ``maximum_annotations``), 16 reviewers with API tokens;
2. runs the same client against each, alternating the systems: Label Studio single client,
   Preregistry single client, Label Studio 16 clients, Preregistry 16 clients. A cycle is one
   "next" and one score: Label Studio ``GET /api/projects/<id>/next`` then ``POST
   /api/tasks/<id>/annotations/``; Preregistry ``POST /api/v1/tasks/next`` then ``POST
   /api/v1/tasks/<token>/score``. With ``--chained`` Preregistry's client uses the score's
   ``"next": true`` option, as the scoring page does (one request per cycle after the first);
3. checks both databases for double assignments (more than k scores on a task, one reviewer
   twice on a task, two live reservations of one task);
4. prints each run and the ratios within the round, and appends them to ``--out`` (JSON lines).

The measured loop's client (``cycle_request``) writes each request on a new socket and reads the
answer back without ``http.client`` (0.36 against 0.65 ms of client CPU per cycle, measured): on
two cores the 16 client processes share the CPU with the server they measure. Each run reports
the clients' CPU per cycle beside the server's.

Both servers run under gunicorn with 4 sync workers (``BENCH_APP_WORKERS`` changes Preregistry's)
on the same PostgreSQL (Preregistry with its production settings: persistent connections). Server
CPU per cycle is the CPU time of the
gunicorn workers, plus, for Preregistry, of its PostgreSQL backends (persistent, so they can be
measured; Label Studio opens a connection per request, whose backends exit before they can be
read, so its figure leaves the database out).

Reproduce (about 25 minutes for the four rounds on two busy cores):

    .venv/bin/python tests/benchmarks/queue_vs_label_studio.py \\
        --tasks 20000 200000 --k 1 2 --seconds 60 --single 200

For ratios on a quiet machine, give each round fresh databases (Label Studio slows as its task
table grows, so ``--reuse-databases`` flatters later rounds) and ``--settle 1.0`` (each measured
run waits until the 1-minute load average is below 1).

Label Studio's license (Apache 2.0) allows this use; nothing of it is copied into the project.
"""

import argparse
import http.client
import json
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
LS_VERSION = "1.23.2"
TEXT = "prompt {i}: " + "lorem ipsum dolor sit amet " * 8
LS_CONFIG = (
    '<View><Text name="text" value="$text"/>'
    '<Choices name="label" toName="text" choice="single">'
    '<Choice value="1_full_compliance"/><Choice value="2_full_refusal"/>'
    '<Choice value="3_partial_refusal"/></Choices></View>'
)
# Every reviewer gives the same label, so k = 2 creates no adjudication task: both systems do
# the same work (Label Studio has no adjudication).
LABEL = "2_full_refusal"
REVIEWERS = 16


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def load() -> list[str]:
    return Path("/proc/loadavg").read_text().split()[:3]


def settle(below: float | None, most_s: float = 300) -> None:
    """Wait until the 1-minute load average is below ``below`` (at most ``most_s`` seconds), so
    that each run starts on a machine the previous run has left (issue #38: "load below 1
    before each round"). ``None`` does not wait."""
    if below is None:
        return
    deadline = time.time() + most_s
    while float(load()[0]) >= below and time.time() < deadline:
        time.sleep(5)
    if float(load()[0]) >= below:
        log(f"load still {load()[0]} after {most_s:.0f} s; running anyway")


def psql(db: str, sql: str) -> str:
    return subprocess.run(
        ["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", db, "-Atc", sql],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def recreate_database(name: str) -> None:
    psql("postgres", f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    psql("postgres", f'CREATE DATABASE "{name}"')


# --- HTTP ------------------------------------------------------------------------------------


def request(port: int, method: str, path: str, token: str, body: Any = None, timeout=120):
    """One request on a new connection (gunicorn's sync workers close after each response)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {"Authorization": f"Token {token}", "Host": "127.0.0.1"}
    payload = None
    if body is not None:
        payload = json.dumps(body)
        headers["Content-Type"] = "application/json"
    try:
        connection.request(method, path, body=payload, headers=headers)
        response = connection.getresponse()
        data = response.read()
        return response.status, data
    finally:
        connection.close()


def cycle_request(port: int, method: str, path: str, token: str, body: Any = None):
    """``request`` for the measured loop, at a fraction of its client CPU: the same bytes on the
    wire (a new connection, ``Connection: close``, the token, a JSON body) written and read on
    a plain socket, without ``http.client``'s objects. On two cores the clients share the CPU
    with the server they measure, so what the client spends is taken from the server; both
    systems get this same client. Returns ``(status, body bytes)``; raises ``OSError`` on a
    refused or broken connection and ``ValueError`` on an answer that is not HTTP/1.x."""
    payload = b"" if body is None else json.dumps(body).encode()
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        f"Authorization: Token {token}\r\n"
        + (
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
            if body is not None
            else ""
        )
        + "\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=120) as sock:
        sock.sendall(head + payload)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    answer = b"".join(chunks)
    header, _, data = answer.partition(b"\r\n\r\n")
    status_line = header.split(b"\r\n", 1)[0].split()
    if len(status_line) < 2 or not status_line[0].startswith(b"HTTP/1."):
        raise ValueError(f"not an HTTP/1.x answer: {answer[:80]!r}")
    if b"transfer-encoding: chunked" in header.lower():
        raise ValueError("a chunked answer: this client reads Content-Length bodies only")
    return int(status_line[1]), data


def wait_for(port: int, path: str, seconds: float = 120) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            status, _ = request(port, "GET", path, "none", timeout=5)
            if status < 500:
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"nothing answers on port {port}{path}")


# --- Label Studio ----------------------------------------------------------------------------


class LabelStudio:
    name = "label-studio"

    def __init__(self, *, venv: Path, db: str, port: int, data_dir: Path):
        self.venv, self.db, self.port, self.data_dir = venv, db, port, data_dir
        self.server: subprocess.Popen | None = None

    @property
    def package(self) -> Path:
        found = list((self.venv / "lib").glob("python3*/site-packages/label_studio"))
        if not found:
            raise RuntimeError(f"label_studio is not installed in {self.venv}")
        return found[0]

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "core.settings.label_studio",
            "DJANGO_DB": "default",
            "POSTGRE_NAME": self.db,
            "POSTGRE_USER": "postgres",
            "POSTGRE_PASSWORD": "",
            "POSTGRE_HOST": "127.0.0.1",
            "POSTGRE_PORT": "5432",
            "LABEL_STUDIO_BASE_DATA_DIR": str(self.data_dir),
            "DEBUG": "false",
            "LOG_LEVEL": "WARNING",
            "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true",
            # No error reporting to Sentry, no version check on PyPI, no usage analytics: each
            # costs Label Studio network calls (failing ones on a machine without egress).
            "SENTRY_DSN": "",
            "FRONTEND_SENTRY_DSN": "",
            "LATEST_VERSION_CHECK": "false",
            "COLLECT_ANALYTICS": "false",
        }

    def install(self) -> None:
        """Label Studio into a virtualenv of its own (never the project's)."""
        if (self.venv / "bin" / "gunicorn").exists() and list(
            (self.venv / "lib").glob("python3*/site-packages/label_studio")
        ):
            return
        log(f"installing label-studio=={LS_VERSION} into {self.venv}")
        subprocess.run([sys.executable, "-m", "venv", str(self.venv)], check=True)
        subprocess.run(
            [
                str(self.venv / "bin" / "pip"),
                "install",
                "--quiet",
                f"label-studio=={LS_VERSION}",
                "gunicorn",
            ],
            check=True,
        )

    def python(self, code: str) -> str:
        script = f"import sys; sys.path.insert(0, {str(self.package)!r})\n" + code
        done = subprocess.run(
            [str(self.venv / "bin" / "python"), "-c", script],
            cwd=self.package,
            env=self.env(),
            check=True,
            capture_output=True,
            text=True,
        )
        return done.stdout.strip().splitlines()[-1]

    @property
    def template(self) -> str:
        return f"{self.db}_migrated"

    def _migrated_template(self) -> None:
        """Label Studio's migrations (about 10 minutes on two busy cores) run once, into a
        database kept as the template each fresh round copies: a copy is the same empty, migrated
        database, made in seconds. Its users are made after the copy, as before."""
        if psql("postgres", f"SELECT 1 FROM pg_database WHERE datname = '{self.template}'"):
            return
        log(f"migrating Label Studio into {self.template} (once)")
        recreate_database(self.template)
        subprocess.run(
            [str(self.venv / "bin" / "python"), "manage.py", "migrate", "--noinput"],
            cwd=self.package,
            env={**self.env(), "POSTGRE_NAME": self.template},
            check=True,
            capture_output=True,
        )

    def prepare(self, *, reuse: bool = False) -> None:
        """A fresh database (a copy of the migrated template), or with ``reuse`` the one a
        previous run left, its users and tokens read back."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if not reuse:
            self._migrated_template()
            psql("postgres", f'DROP DATABASE IF EXISTS "{self.db}" WITH (FORCE)')
            psql("postgres", f'CREATE DATABASE "{self.db}" TEMPLATE "{self.template}"')
        users = self.python(
            f"""
import json, django
django.setup()
from users.models import User
from organizations.models import Organization
from organizations.functions import create_organization
from rest_framework.authtoken.models import Token
admin = User.objects.filter(email="admin@bench.local").first()
if admin is None:
    admin = User.objects.create_user(email="admin@bench.local", password="bench-admin-1")
    org = create_organization(title="Bench", created_by=admin, legacy_api_tokens_enabled=True)
else:
    org = Organization.objects.get(title="Bench")
org.jwt.legacy_api_tokens_enabled = True
org.jwt.save()
admin.active_organization = org
admin.save()
tokens = []
for i in range({REVIEWERS}):
    email = f"ann{{i:02d}}@bench.local"
    u = User.objects.filter(email=email).first()
    if u is None:
        u = User.objects.create_user(email=email, password="bench-pass-1")
    org.add_user(u)
    u.active_organization = org
    u.save(update_fields=["active_organization"])
    tokens.append(Token.objects.get_or_create(user=u)[0].key)
print(json.dumps({{"admin": Token.objects.get_or_create(user=admin)[0].key, "tokens": tokens}}))
"""
        )
        found = json.loads(users)
        self.admin, self.tokens = found["admin"], found["tokens"]

    def start(self) -> None:
        self.server = subprocess.Popen(
            [
                str(self.venv / "bin" / "gunicorn"),
                "core.wsgi:application",
                "--workers",
                "4",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--timeout",
                "900",
                "--log-level",
                "warning",
            ],
            cwd=self.package,
            env=self.env(),
            start_new_session=True,
        )
        wait_for(self.port, "/health")

    def build(self, *, tasks: int, k: int) -> int:
        status, body = request(
            self.port,
            "POST",
            "/api/projects/",
            self.admin,
            {
                "title": f"bench {tasks} k{k} {time.time():.0f}",
                "label_config": LS_CONFIG,
                "maximum_annotations": k,
                "show_overlap_first": False,
            },
        )
        assert status == 201, body[:300]
        project = json.loads(body)["id"]
        for start in range(0, tasks, 20_000):
            chunk = [{"text": TEXT.format(i=i)} for i in range(start, min(tasks, start + 20_000))]
            status, body = request(
                self.port, "POST", f"/api/projects/{project}/import", self.admin, chunk, 1800
            )
            assert status == 201, body[:300]
        # Autovacuum is off on this machine: without statistics Label Studio's planner reads the
        # new tasks blind (one A/B measured it 10-25 % slower), so both databases are analysed.
        psql(self.db, "ANALYZE")
        return project

    def next_path(self, project: int) -> str:
        return f"/api/projects/{project}/next"

    def check(self, project: int, k: int) -> dict[str, int]:
        q = lambda sql: int(psql(self.db, sql))  # noqa: E731
        return {
            "scores": q(f"select count(*) from task_completion where project_id = {project}"),
            "tasks_over_k": q(
                "select count(*) from (select task_id from task_completion "
                f"where project_id = {project} group by 1 having count(*) > {k}) x"
            ),
            "reviewer_twice": q(
                "select count(*) from (select task_id, completed_by_id from task_completion "
                f"where project_id = {project} group by 1, 2 having count(*) > 1) x"
            ),
        }

    def stop(self) -> None:
        stop(self.server)


# --- Preregistry -----------------------------------------------------------------------------


class Preregistry:
    name = "preregistry"

    def __init__(self, *, db: str, port: int):
        self.db, self.port = db, port
        self.server: subprocess.Popen | None = None
        self.tokens: list[str] = []

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings.production",
            # As deployed (docs/deploy.md): the runtime role, neither superuser nor owner; the
            # owner role migrates. /healthz answers 503 under a role that could lift the guards.
            "DATABASE_URL": f"postgres://{self.db}_app@127.0.0.1:5432/{self.db}",
            "DATABASE_OWNER_URL": f"postgres://{self.db}_owner@127.0.0.1:5432/{self.db}",
            "SECRET_KEY": "benchmark-only-secret-key-not-for-use-anywhere-0123456789",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "SECURE_SSL_REDIRECT": "false",
            "DB_CONN_MAX_AGE": "600",
            "REDIS_URL": "",
            "LOG_LEVEL": "WARNING",
        }

    def manage(self, *args: str) -> str:
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env(),
            check=True,
            capture_output=True,
            text=True,
        ).stdout

    def prepare(self) -> None:
        recreate_database(self.db)
        self.manage(
            "db_roles_create",
            "--admin-url",
            "postgres://postgres@127.0.0.1:5432/postgres",
            "--adopt",
        )
        self.manage("migrate", "--noinput")

    def start(self) -> None:
        self.server = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "gunicorn"),
                "config.wsgi:application",
                "--workers",
                os.environ.get("BENCH_APP_WORKERS", "4"),
                "--bind",
                f"127.0.0.1:{self.port}",
                "--timeout",
                "900",
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env=self.env(),
            start_new_session=True,
        )
        wait_for(self.port, "/healthz")

    def build(self, *, tasks: int, k: int) -> int:
        out = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--build-app", str(tasks), str(k)],
            cwd=ROOT,
            env={**self.env(), "DJANGO_SETTINGS_MODULE": "config.settings.test"},
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        built = json.loads(out.strip().splitlines()[-1])
        self.tokens = built["tokens"]
        log(f"preregistry build: {built['timings']}")
        return built["version"]

    def check(self, version: int, k: int) -> dict[str, int]:
        q = lambda sql: int(psql(self.db, sql))  # noqa: E731
        return {
            "scores": q(f"select count(*) from raters_score where version_id = {version}"),
            "tasks_over_k": q(
                "select count(*) from (select s.response_id from raters_score s "
                "join raters_scoringtask t on t.id = s.task_id "
                f"where s.version_id = {version} and t.kind = 'primary' "
                f"group by 1 having count(*) > {k}) x"
            ),
            "reviewer_twice": q(
                "select count(*) from (select response_id, reviewer_id from raters_score "
                f"where version_id = {version} group by 1, 2 having count(*) > 1) x"
            ),
            "task_scored_twice": q(
                "select count(*) from (select task_id from raters_score "
                f"where version_id = {version} and corrects_id is null "
                "group by 1 having count(*) > 1) x"
            ),
            "task_reserved_twice": q(
                "select count(*) from (select task_id from raters_assignment "
                f"where version_id = {version} and outcome = 'active' "
                "group by 1 having count(*) > 1) x"
            ),
        }

    def stop(self) -> None:
        stop(self.server)


def stop(server: subprocess.Popen | None) -> None:
    if server is None or server.poll() is not None:
        return
    os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)


def build_app_study(tasks: int, k: int) -> None:
    """Runs in a child process with Django set up: a frozen version with ``tasks`` responses
    (the Label Studio texts), scoring opened, 16 reviewers with tokens. Prints JSON."""
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.db import connection
    from rest_framework.authtoken.models import Token

    from apps.raters.services import rubric_apply_template, scoring_open
    from tests.factories import (
        MembershipFactory,
        ProtocolVersionFactory,
        UserFactory,
        frozen_by_hand,
        set_parameters,
    )

    started = time.perf_counter()
    # Factory sequences restart in every process: names unique to this build instead.
    stamp = f"{time.time_ns():x}"
    version = ProtocolVersionFactory(protocol__code=f"BENCH-{stamp}")
    set_parameters(version, scores_per_response=k, seed=tasks + k)
    rubric_apply_template(version=version, template="xstest")
    cells = 100
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO items_level (version_id, ordinal, code, name, form) "
            "VALUES (%s, 0, 'L0', 'level', '') RETURNING id",
            [version.pk],
        )
        level = cursor.fetchone()[0]
        cursor.execute(
            "INSERT INTO items_family (version_id, code, name, role, description, stopping_rule) "
            "VALUES (%s, 'F', 'family', 'other', '', '') RETURNING id",
            [version.pk],
        )
        family = cursor.fetchone()[0]
        cursor.execute(
            "INSERT INTO items_item (version_id, family_id, code, domain, notes) "
            "SELECT %s, %s, 'i' || n, '', '' FROM generate_series(1, %s) n",
            [version.pk, family, cells],
        )
        cursor.execute(
            "INSERT INTO items_cell (version_id, item_id, level_id, prompt, absent, "
            "absent_reason) SELECT %s, id, %s, 'Classify the response.', false, '' "
            "FROM items_item WHERE version_id = %s",
            [version.pk, level, version.pk],
        )
        cursor.execute(
            "INSERT INTO responses_evaluand (label, model, provider, safeguards, "
            "inference_settings, harness_version, system_prompt, observation_projection, "
            "toolkit, memory_policy, budgets, retry_policy, identity_sha256, created_at) "
            "VALUES (%s, 'm', '', '{}', '{}', '', '', '', '[]', '', '{}', '', %s, now()) "
            "RETURNING id",
            [f"bench-{version.pk}", f"{version.pk:064x}"],
        )
        evaluand = cursor.fetchone()[0]
        cursor.execute(
            "INSERT INTO responses_administration (version_id, position, cell_id, evaluand_id, "
            "repetition, block, assignment) "
            "SELECT %s, row_number() OVER (ORDER BY r, c.id), c.id, %s, r, 0, '{}' "
            "FROM items_cell c, generate_series(1, %s) r WHERE c.version_id = %s",
            [version.pk, evaluand, tasks // cells, version.pk],
        )
    frozen_by_hand(version)
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO responses_attempt (version_id, administration_id, number, "
            "terminal_outcome, raw, created_at) SELECT %s, id, 1, 'completed', '{}', now() "
            "FROM responses_administration WHERE version_id = %s ORDER BY position",
            [version.pk, version.pk],
        )
        cursor.execute(
            "INSERT INTO responses_response (version_id, attempt_id, text, word_count) "
            "SELECT %s, id, 'prompt ' || (row_number() OVER (ORDER BY id) - 1) || ': ' || "
            "repeat('lorem ipsum dolor sit amet ', 8), 42 "
            "FROM responses_attempt WHERE version_id = %s",
            [version.pk, version.pk],
        )
    built = time.perf_counter()
    pi = MembershipFactory(
        protocol=version.protocol, role="pi", user=UserFactory(username=f"pi-{stamp}")
    ).user
    created = scoring_open(version=version, user=pi)
    opened = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    tokens = []
    for n in range(REVIEWERS):
        user = UserFactory(username=f"reviewer{n:02d}-{stamp}")
        MembershipFactory(user=user, protocol=version.protocol, role="reviewer")
        tokens.append(Token.objects.create(user=user).key)
    print(
        json.dumps(
            {
                "version": version.pk,
                "tokens": tokens,
                "timings": {
                    "responses": tasks,
                    "tasks_created": created,
                    "build_s": round(built - started, 1),
                    "scoring_open_s": round(opened - built, 2),
                },
            }
        )
    )


# --- the client --------------------------------------------------------------------------------


def _client(
    system: str, port: int, target: int, token: str, cycles, seconds, chained, barrier, out
):
    """One reviewer's loop in its own process: next → score until ``cycles`` or ``seconds``.
    ``chained`` (score with ``"next": true``) is Preregistry's alone: Label Studio's client always
    asks for its next task on its own."""
    chained = chained and system == "preregistry"
    nexts, submits, errors, served = [], [], Counter(), []
    empty = False
    cpu = 0.0
    try:
        barrier.wait()
        cpu = time.process_time()
        deadline = time.perf_counter() + (seconds or 3600)
        done = 0
        pending = None  # chained: the task the last score's reply reserved
        while time.perf_counter() < deadline and (cycles is None or done < cycles):
            t0 = time.perf_counter()
            if system == "label-studio":
                status, body = cycle_request(port, "GET", f"/api/projects/{target}/next", token)
                if status == 404:
                    empty = True
                    break
                task = json.loads(body)["id"] if status == 200 else None
            elif pending is not None:
                status, task = 200, pending
            else:
                status, body = cycle_request(port, "POST", "/api/v1/tasks/next", token, {})
                found = json.loads(body).get("task") if status == 200 else None
                if status == 200 and found is None:
                    empty = True
                    break
                task = found["token"] if found else None
            t1 = time.perf_counter()
            if task is None:
                errors[f"next {status}"] += 1
                continue
            if system == "label-studio":
                status, body = cycle_request(
                    port,
                    "POST",
                    f"/api/tasks/{task}/annotations/",
                    token,
                    {
                        "result": [
                            {
                                "from_name": "label",
                                "to_name": "text",
                                "type": "choices",
                                "value": {"choices": [LABEL]},
                            }
                        ],
                        "lead_time": 1.0,
                    },
                )
            else:
                body_out = {"values": {"label": LABEL}, "idempotency_key": task, "seconds_spent": 1}
                if chained:
                    body_out["next"] = True
                status, body = cycle_request(
                    port, "POST", f"/api/v1/tasks/{task}/score", token, body_out
                )
                pending = None
                if chained and status in (200, 201):
                    following = json.loads(body)["next"]["task"]
                    pending = following["token"] if following else None
            t2 = time.perf_counter()
            if status != 201:
                errors[f"score {status} {body[:80]!r}"] += 1
                continue
            if pending is None or not chained:
                nexts.append(t1 - t0)
            submits.append(t2 - t1)
            served.append(task)
            done += 1
            if chained and pending is None:
                empty = True
                break
    except Exception as failure:  # reported, never hidden
        errors[f"client {failure!r}"] += 1
    out.put(
        {
            "next": nexts,
            "submit": submits,
            "errors": dict(errors),
            "served": served,
            "empty": empty,
            "cpu_s": time.process_time() - cpu,
        }
    )


def cpu_by_pid(pids: list[int]) -> dict[int, float]:
    """CPU seconds (user + system) of each process still alive."""
    hz = os.sysconf("SC_CLK_TCK")
    seconds = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        seconds[pid] = (int(fields[11]) + int(fields[12])) / hz
    return seconds


def cpu_spent(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds spent between two readings by the processes alive at both (a backend that
    exited in between would otherwise subtract its whole life: a negative figure)."""
    return sum(after[pid] - before[pid] for pid in before.keys() & after.keys())


def _only(seconds: dict[int, float], pids: list[int]) -> dict[int, float]:
    return {pid: value for pid, value in seconds.items() if pid in pids}


def worker_pids(master: int) -> list[int]:
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == master:
            pids.append(int(stat.parent.name))
    return pids


def backend_pids(db: str) -> list[int]:
    out = psql("postgres", f"select pid from pg_stat_activity where datname = '{db}'")
    return [int(p) for p in out.split()] if out else []


def _systems(app, version, ls, project) -> list[tuple]:
    """Each system's (name, port, target, tokens, server, database), Label Studio first when
    it takes part (``project`` is None when it does not)."""
    systems = [("preregistry", app.port, version, app.tokens, app, app.db)]
    if project is not None:
        systems.insert(0, ("label-studio", ls.port, project, ls.tokens, ls, ls.db))
    return systems


def run(system, *, port, target, tokens, clients, cycles, seconds, chained, server, db, k):
    """One run of the client: ``clients`` processes, ``cycles`` each or for ``seconds``."""
    context = multiprocessing.get_context("fork")
    out = context.Queue()
    barrier = context.Barrier(clients + 1)
    processes = [
        context.Process(
            target=_client,
            args=(system, port, target, tokens[i], cycles, seconds, chained, barrier, out),
        )
        for i in range(clients)
    ]
    for process in processes:
        process.start()
    before_load = load()
    workers = worker_pids(server.server.pid)
    # Persistent backends only (Preregistry's); Label Studio's exit after each request.
    backends = backend_pids(db)
    cpu_before = cpu_by_pid(workers + backends)
    barrier.wait()
    wall = time.perf_counter()
    results = [out.get(timeout=(seconds or 1800) + 900) for _ in processes]
    wall = time.perf_counter() - wall
    for process in processes:
        process.join()
    cpu_after = cpu_by_pid(workers + backends)
    next_ms = sorted(x * 1000 for r in results for x in r["next"])
    submit_ms = sorted(x * 1000 for r in results for x in r["submit"])
    errors: Counter = Counter()
    for r in results:
        errors.update(r["errors"])
    served = Counter(t for r in results for t in r["served"])
    n = sum(len(r["served"]) for r in results)

    def pct(values, p):
        return (
            round(values[min(len(values) - 1, int(p / 100 * (len(values) - 1)))], 1)
            if values
            else None
        )

    return {
        "system": system,
        "clients": clients,
        "cycles": n,
        "wall_s": round(wall, 1),
        "cycles_per_s": round(n / wall, 1),
        "next_p50_ms": pct(next_ms, 50),
        "next_p95_ms": pct(next_ms, 95),
        "submit_p50_ms": pct(submit_ms, 50),
        "submit_p95_ms": pct(submit_ms, 95),
        "server_cpu_ms_per_cycle": (
            round(cpu_spent(cpu_before, cpu_after) * 1000 / n, 2) if n else None
        ),
        "cpu_includes_database": system == "preregistry",
        # The application server alone (gunicorn's workers), the figure both systems have.
        "app_cpu_ms_per_cycle": (
            round(cpu_spent(_only(cpu_before, workers), cpu_after) * 1000 / n, 2) if n else None
        ),
        # The clients' own CPU: on this machine they share the cores with the server they measure.
        "client_cpu_ms_per_cycle": (
            round(sum(r["cpu_s"] for r in results) * 1000 / n, 2) if n else None
        ),
        "errors": dict(errors),
        "n_errors": sum(errors.values()),
        "ran_out_of_tasks": any(r["empty"] for r in results),
        "client_served_beyond_k": sum(1 for c in served.values() if c > k),
        "load_before": before_load,
        "load_after": load(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, nargs="+", default=[20_000, 200_000])
    parser.add_argument("--k", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--single", type=int, default=200, help="cycles of the single client")
    parser.add_argument("--clients", type=int, default=REVIEWERS)
    parser.add_argument("--chained", action="store_true", help="Preregistry: score with next")
    parser.add_argument(
        "--settle",
        type=float,
        metavar="LOAD",
        help="before each measured run, wait (up to 5 min) until the 1-minute load is below LOAD",
    )
    parser.add_argument(
        "--warm", type=int, default=5, help="unmeasured cycles per client before each round"
    )
    parser.add_argument("--ls-venv", type=Path, default=Path("/work/lsvenv"))
    parser.add_argument("--ls-db", default="lsbench_queue")
    parser.add_argument("--app-db", default="prereg_queue_bench")
    parser.add_argument("--ports", type=int, nargs=2, default=[18610, 18611])
    parser.add_argument("--out", type=Path, default=ROOT / "var" / "queue_vs_label_studio.jsonl")
    parser.add_argument(
        "--reuse-databases",
        action="store_true",
        help="keep both databases of an earlier run (each round builds its own tasks anyway)",
    )
    parser.add_argument(
        "--only-preregistry",
        action="store_true",
        help="run Preregistry alone (to profile it between side-by-side rounds; no ratios)",
    )
    parser.add_argument("--build-app", nargs=2, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build_app:
        build_app_study(*args.build_app)
        return

    command = " ".join([Path(sys.executable).name, *sys.argv])
    ls = LabelStudio(
        venv=args.ls_venv, db=args.ls_db, port=args.ports[1], data_dir=Path(f"/tmp/{args.ls_db}")
    )
    app = Preregistry(db=args.app_db, port=args.ports[0])
    with_ls = not args.only_preregistry
    if with_ls:
        ls.install()
    log("preparing databases")
    if with_ls:
        ls.prepare(reuse=args.reuse_databases)
    if not args.reuse_databases:
        app.prepare()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    try:
        if with_ls:
            ls.start()
        app.start()
        for tasks in args.tasks:
            for k in args.k:
                log(f"round: {tasks} tasks, k = {k}: building")
                t0 = time.perf_counter()
                project = ls.build(tasks=tasks, k=k) if with_ls else None
                ls_build = time.perf_counter() - t0
                version = app.build(tasks=tasks, k=k)
                runs = []
                kw = {"chained": args.chained, "k": k}
                # The first phase is not measured: each worker's first requests (imports, URL
                # resolver, prepared statements, caches) would count in the single client's CPU.
                for measured, clients, cycles, seconds in (
                    (False, args.clients, args.warm, None),
                    (True, 1, args.single, None),
                    (True, args.clients, None, args.seconds),
                ):
                    for system, port, target, tokens, server, db in _systems(
                        app, version, ls, project
                    ):
                        if measured:
                            settle(args.settle)
                        result = run(
                            system,
                            port=port,
                            target=target,
                            tokens=tokens,
                            clients=clients,
                            cycles=cycles,
                            seconds=seconds,
                            server=server,
                            db=db,
                            **kw,
                        )
                        if measured:
                            log(f"  {system}, {clients} client(s): {json.dumps(result)}")
                            runs.append(result)
                checks = {"preregistry": app.check(version, k)}
                if not with_ls:
                    log(f"    checks {checks}")
                    continue
                checks["label-studio"] = ls.check(project, k)
                by = {(r["system"], r["clients"]): r for r in runs}
                single = (by[("label-studio", 1)], by[("preregistry", 1)])
                many = (by[("label-studio", args.clients)], by[("preregistry", args.clients)])
                summary = {
                    "round": f"{tasks} tasks, k = {k}",
                    "utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
                    "command": command,
                    "chained": args.chained,
                    "ls_import_s": round(ls_build, 1),
                    "throughput_ratio_16": round(
                        many[1]["cycles_per_s"] / many[0]["cycles_per_s"], 1
                    )
                    if many[0]["cycles_per_s"]
                    else None,
                    "throughput_ratio_1": round(
                        single[1]["cycles_per_s"] / single[0]["cycles_per_s"], 1
                    )
                    if single[0]["cycles_per_s"]
                    else None,
                    "double_assignments": checks,
                    "runs": runs,
                }
                print(json.dumps(summary), flush=True)
                with args.out.open("a") as handle:
                    handle.write(json.dumps(summary) + "\n")
                log(
                    f"round {summary['round']}: 16 clients {many[0]['cycles_per_s']} vs "
                    f"{many[1]['cycles_per_s']} cycles/s → ratio {summary['throughput_ratio_16']}; "
                    f"single next p50 {single[0]['next_p50_ms']} vs {single[1]['next_p50_ms']} ms; "
                    f"checks {checks}"
                )
    finally:
        if with_ls:
            ls.stop()
        app.stop()


if __name__ == "__main__":
    main()
