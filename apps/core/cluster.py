"""A multi-node deployment on one machine: `make cluster`, `make cluster-stop` (docs/cluster.md).

What it starts, each as a process of its own with its log under ``<run dir>/logs/``:

- **HAProxy** on ``CLUSTER_HTTP_PORT``, round robin over the web nodes, each answer naming its
  node in ``X-Preregistry-Node``; its own 502/503/504 answers are JSON, so a client of the API
  never meets an HTML error page, even when every node is down;
- **two gunicorn nodes** (``CLUSTER_NODE_PORTS``, production settings);
- **PgBouncer** in transaction mode on ``CLUSTER_PGBOUNCER_PORT``, in front of the PostgreSQL
  of ``DATABASE_URL``, logging in as its runtime role; the nodes and workers connect through it,
  ``migrate`` goes direct, as the owner of ``DATABASE_OWNER_URL``;
- **two Celery workers** with their own hostnames (``worker1@…``, ``worker2@…``) and **beat**
  once;
- **Redis** on ``CLUSTER_REDIS_PORT``, unless ``CLUSTER_REDIS_URL`` names one already running.

Everything it writes (configuration, the generated ``SECRET_KEY``, the checkpoint signing key,
PgBouncer's user list, pid files, logs, the shared folder of import previews) is under the run
directory (``CLUSTER_DIR``, default ``var/cluster``), never in the repository. Every process of
the cluster reads one environment (``<run dir>/cluster.env``): the settings that must agree
across nodes (``SECRET_KEY`` for sessions and signed values, ``CACHE_URL``, the staging folder,
the signing key and its state) are the same by construction.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

# The processes, in the order they start (stopped in reverse).
ORDER = ("redis", "pgbouncer", "node1", "node2", "haproxy", "worker1", "worker2", "beat")


class ClusterError(RuntimeError):
    """The cluster could not start (the message names the process and its log)."""


def _env_int(name: str, default: int) -> int:
    return int(os.environ.get(name) or default)


def free_port() -> int:
    """A TCP port nothing listens on now (the kernel's choice)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def answers(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something accepts TCP connections on ``host:port``."""
    try:
        socket.create_connection((host, port), timeout=1).close()
    except OSError:
        return False
    return True


@dataclass
class Cluster:
    """The cluster's ports and folders. ``from_env`` reads them from the environment."""

    run_dir: Path
    database_url: str
    owner_url: str = ""
    http_port: int = 8100
    node_ports: tuple[int, ...] = (8101, 8102)
    pgbouncer_port: int = 6432
    stats_port: int = 8104
    redis_port: int = 6390
    redis_url: str = ""  # given: use that Redis; empty: start one on redis_port
    celery_app: str = "config"
    gunicorn_workers: int = 2
    extra_env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_env(cls) -> Cluster:
        database_url = os.environ.get("DATABASE_URL", "")
        if not database_url.startswith(("postgres://", "postgresql://")):
            raise ClusterError(
                "the cluster needs PostgreSQL: set DATABASE_URL to the runtime role's "
                "postgres:// URL (and DATABASE_OWNER_URL to the owner's; docs/deploy.md)"
            )
        nodes = os.environ.get("CLUSTER_NODE_PORTS", "8101,8102")
        return cls(
            run_dir=Path(os.environ.get("CLUSTER_DIR") or ROOT / "var" / "cluster").resolve(),
            database_url=database_url,
            owner_url=os.environ.get("DATABASE_OWNER_URL", ""),
            http_port=_env_int("CLUSTER_HTTP_PORT", 8100),
            node_ports=tuple(int(p) for p in nodes.split(",") if p.strip()),
            pgbouncer_port=_env_int("CLUSTER_PGBOUNCER_PORT", 6432),
            stats_port=_env_int("CLUSTER_STATS_PORT", 8104),
            redis_port=_env_int("CLUSTER_REDIS_PORT", 6390),
            redis_url=os.environ.get("CLUSTER_REDIS_URL", ""),
            celery_app=os.environ.get("CLUSTER_CELERY_APP", "config"),
            gunicorn_workers=_env_int("CLUSTER_GUNICORN_WORKERS", 2),
        )

    # -- where things are -------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The load balancer's address."""
        return f"http://127.0.0.1:{self.http_port}"

    def node_url(self, index: int) -> str:
        """One web node's own address (``index`` 0 or 1), bypassing the load balancer."""
        return f"http://127.0.0.1:{self.node_ports[index]}"

    @property
    def shared_dir(self) -> Path:
        """What every node and worker of the cluster mounts: import previews, the signer."""
        return self.run_dir / "shared"

    @property
    def broker_url(self) -> str:
        return self.redis_url or f"redis://127.0.0.1:{self.redis_port}/0"

    @property
    def pooled_database_url(self) -> str:
        """``DATABASE_URL`` with its host and port replaced by PgBouncer's."""
        parts = urllib.parse.urlsplit(self.database_url)
        credentials = parts.netloc.rpartition("@")[0]
        netloc = f"{credentials}@127.0.0.1:{self.pgbouncer_port}"
        return urllib.parse.urlunsplit(parts._replace(netloc=netloc))

    def log(self, name: str) -> Path:
        return self.run_dir / "logs" / f"{name}.log"

    def pid(self, name: str) -> int | None:
        try:
            return int((self.run_dir / "pids" / f"{name}.pid").read_text())
        except (FileNotFoundError, ValueError):
            return None

    # -- configuration ----------------------------------------------------------------------

    def configure(self) -> None:
        """Write the run directory's configuration (once; a second start reuses its secrets)."""
        for folder in ("logs", "pids", "shared/imports", "shared/signer-state"):
            (self.run_dir / folder).mkdir(parents=True, exist_ok=True)
        self.run_dir.chmod(0o700)
        secret_file = self.run_dir / "secret_key"
        if not secret_file.exists():
            _write_private(secret_file, secrets.token_urlsafe(64))
        key_file = self.shared_dir / "log-signing.key"
        if not key_file.exists():
            _write_private(key_file, base64.b64encode(secrets.token_bytes(32)).decode())
        self._write_pgbouncer()
        self._write_haproxy()
        env = self.environment()
        lines = [f"{k}={v}" for k, v in sorted(env.items()) if k in self._own_keys()]
        _write_private(self.run_dir / "cluster.env", "\n".join(lines) + "\n")

    def _own_keys(self) -> set[str]:
        return set(self.environment(inherit=False))

    def environment(self, *, inherit: bool = True) -> dict[str, str]:
        """The environment of every node, worker and beat (the caller's, then the cluster's)."""
        own = {
            "DJANGO_SETTINGS_MODULE": "config.settings.production",
            "SECRET_KEY": (self.run_dir / "secret_key").read_text().strip()
            if (self.run_dir / "secret_key").exists()
            else "",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            # Plain HTTP on the loopback; a deployment terminates TLS in front (docs/deploy.md).
            "SECURE_SSL_REDIRECT": "False",
            "DATABASE_URL": self.pooled_database_url,
            "DB_TRANSACTION_POOLER": "true",
            "DB_CONN_MAX_AGE": "600",
            "REDIS_URL": self.broker_url,
            # Throttle counters and sessions shared by every node (apps/core/cluster.py's note).
            "CACHE_URL": self.broker_url,
            "PREREGISTRY_IMPORT_STAGING": str(self.shared_dir / "imports"),
            "LOG_SIGNING_KEY_FILE": str(self.shared_dir / "log-signing.key"),
            "LOG_SIGNING_STATE_DIR": str(self.shared_dir / "signer-state"),
            "PYTHONPATH": str(ROOT),
            **self.extra_env,
        }
        own.pop("DATABASE_OWNER_URL", None)
        if not inherit:
            return own
        inherited = {k: v for k, v in os.environ.items() if k != "DATABASE_OWNER_URL"}
        return {**inherited, **own}

    def _write_pgbouncer(self) -> None:
        parts = urllib.parse.urlsplit(self.database_url)
        user = urllib.parse.unquote(parts.username or "postgres")
        password = urllib.parse.unquote(parts.password or "")
        database = parts.path.lstrip("/")
        # Local trust authentication needs no password; a password-protected role is passed on
        # with SCRAM (PgBouncer keeps the plain password in the user list, mode 0600 here).
        auth = "scram-sha-256" if password else "trust"
        _write_private(self.run_dir / "userlist.txt", f'"{user}" "{password}"\n')
        server = f"host={parts.hostname or '127.0.0.1'} port={parts.port or 5432}"
        config = f"""\
[databases]
{database} = {server} dbname={database} user={user}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {self.pgbouncer_port}
unix_socket_dir =
auth_type = {auth}
auth_file = {self.run_dir / "userlist.txt"}
pidfile =
logfile =
; Transaction pooling: a server connection is lent for one transaction. The application holds
; nothing on the server between transactions (docs/cluster.md): transaction-scoped advisory
; locks only, no session SET, no WITH HOLD cursor, no prepared statement unless
; max_prepared_statements (PgBouncer 1.21+) carries it.
pool_mode = transaction
default_pool_size = {_env_int("CLUSTER_PGBOUNCER_POOL", 10)}
max_client_conn = 500
server_reset_query =
ignore_startup_parameters = extra_float_digits,options
server_login_retry = 1
query_wait_timeout = 30
"""
        (self.run_dir / "pgbouncer.ini").write_text(config)

    def _write_haproxy(self) -> None:
        errors = self.run_dir / "errors"
        errors.mkdir(exist_ok=True)
        reasons = {502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout"}
        for status, reason in reasons.items():
            body = json.dumps(
                {"detail": f"No web node could answer ({status}); try again shortly."}
            )
            (errors / f"{status}.http").write_text(
                f"HTTP/1.0 {status} {reason}\r\nCache-Control: no-cache\r\nConnection: close\r\n"
                f"Content-Type: application/json\r\nRetry-After: 5\r\n\r\n{body}\n"
            )
        servers = "\n".join(
            f"    server node{i + 1} 127.0.0.1:{port} check inter 1s fall 2 rise 1"
            for i, port in enumerate(self.node_ports)
        )
        config = f"""\
global
    maxconn 2000

defaults
    mode http
    timeout connect 5s
    timeout client 70s
    timeout server 70s
    option forwardfor
    retries 2
    option redispatch
    errorfile 502 {errors / "502.http"}
    errorfile 503 {errors / "503.http"}
    errorfile 504 {errors / "504.http"}

frontend web
    bind 127.0.0.1:{self.http_port}
    default_backend nodes

backend nodes
    balance roundrobin
    # A node is up while its process answers /healthz at all: 503 there means the database or
    # the broker is away, which every node shares; taking the nodes out would turn the
    # application's JSON 503 into the balancer's.
    option httpchk
    http-check send meth GET uri /healthz hdr Host 127.0.0.1
    http-check expect rstatus ^(200|503)$
    http-response set-header X-Preregistry-Node %s
{servers}

listen stats
    bind 127.0.0.1:{self.stats_port}
    stats enable
    stats uri /
"""
        (self.run_dir / "haproxy.cfg").write_text(config)

    # -- processes --------------------------------------------------------------------------

    def commands(self) -> dict[str, list[str]]:
        celery = [str(BIN / "celery"), "-A", self.celery_app]
        commands = {
            "pgbouncer": [
                _tool("pgbouncer"),
                *_unprivileged(),
                str(self.run_dir / "pgbouncer.ini"),
            ],
            "haproxy": [_tool("haproxy"), "-db", "-f", str(self.run_dir / "haproxy.cfg")],
            "worker1": [*celery, "worker", "-n", "worker1@%h", "--concurrency", "1", "-l", "info"],
            "worker2": [*celery, "worker", "-n", "worker2@%h", "--concurrency", "1", "-l", "info"],
            "beat": [*celery, "beat", "-s", str(self.run_dir / "beat-schedule"), "-l", "info"],
        }
        for i, port in enumerate(self.node_ports):
            commands[f"node{i + 1}"] = [
                str(BIN / "gunicorn"),
                "config.wsgi:application",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                str(self.gunicorn_workers),
                "--timeout",
                "60",
                "--name",
                f"preregistry-node{i + 1}",
            ]
        if not self.redis_url:
            commands["redis"] = [
                _tool("redis-server"),
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.redis_port),
                "--save",
                "",
                "--appendonly",
                "no",
            ]
        return commands

    def spawn(self, name: str) -> int:
        """Start one process of the cluster (its own session, so it is stopped with its
        children) and record its pid."""
        command = self.commands()[name]
        with self.log(name).open("ab") as log:
            process = subprocess.Popen(
                command,
                cwd=ROOT,
                env=self.environment(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        (self.run_dir / "pids" / f"{name}.pid").write_text(str(process.pid))
        return process.pid

    def send(self, name: str, sig: int) -> None:
        """Send ``sig`` to one process of the cluster and its children, and return at once
        (``SIGSTOP``/``SIGCONT`` pause and resume it)."""
        pid = self.pid(name)
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, sig)

    def kill(self, name: str, sig: int = signal.SIGTERM, *, wait: float = 30.0) -> None:
        """Send ``sig`` to one process of the cluster (and its children) and wait for it."""
        pid = self.pid(name)
        if pid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, sig)
        deadline = time.monotonic() + wait
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if _alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            while _alive(pid):
                time.sleep(0.05)
        (self.run_dir / "pids" / f"{name}.pid").unlink(missing_ok=True)

    def start(self, *, migrate: bool = True, timeout: float = 120.0) -> None:
        """Configure, migrate (direct, as the owner), start every process and wait until the
        balancer answers through both nodes and both workers answer a ping."""
        for tool in ("pgbouncer", "haproxy") + (() if self.redis_url else ("redis-server",)):
            _tool(tool)
        self.configure()
        if migrate:
            env = {**os.environ, "DATABASE_URL": self.database_url}
            subprocess.run(
                [sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env, check=True
            )
        names = [n for n in ORDER if n in self.commands()]
        for name in names:
            if self.pid(name) and _alive(self.pid(name) or 0):
                raise ClusterError(f"{name} is running already (make cluster-stop first)")
        try:
            for name in names:
                self.spawn(name)
                if name == "redis":
                    self.wait(lambda: answers(self.redis_port), "redis", timeout)
                if name == "pgbouncer":
                    self.wait(lambda: answers(self.pgbouncer_port), "pgbouncer", timeout)
            for i in range(len(self.node_ports)):
                self.wait(lambda i=i: self.node_ready(i), f"node{i + 1}", timeout)
            self.wait(lambda: _status(self.url + "/healthz") == 200, "haproxy", timeout)
            self.wait(self.workers_answer, "worker1", timeout)
        except BaseException:
            self.stop()
            raise

    def node_ready(self, index: int) -> bool:
        """Whether web node ``index`` answers its health check with 200."""
        return _status(self.node_url(index) + "/healthz") == 200

    def workers_answer(self) -> bool:
        """Whether both Celery workers answer a ping through the broker."""
        from celery import Celery

        app = Celery(broker=self.broker_url)
        try:
            replies = app.control.ping(timeout=1.0)
        finally:
            app.close()
        names = {name.split("@")[0] for reply in replies for name in reply}
        return {"worker1", "worker2"} <= names

    def wait(self, ready, name: str, timeout: float = 120.0) -> None:
        """Wait until ``ready()`` holds; raise ClusterError, with the end of ``name``'s log,
        when ``name`` exits first or ``timeout`` seconds pass."""
        deadline = time.monotonic() + timeout
        while not ready():
            pid = self.pid(name)
            if pid is not None and not _alive(pid):
                raise ClusterError(f"{name} exited; {self._tail(name)}")
            if time.monotonic() > deadline:
                raise ClusterError(f"{name} not ready after {timeout:.0f} s; {self._tail(name)}")
            time.sleep(0.2)

    def _tail(self, name: str, lines: int = 15) -> str:
        try:
            text = self.log(name).read_text(errors="replace").splitlines()[-lines:]
        except FileNotFoundError:
            return f"no log at {self.log(name)}"
        return f"the end of {self.log(name)}:\n" + "\n".join(text)

    def stop(self, *, wait: float = 30.0) -> None:
        """Stop every process the run directory's pid files name: SIGTERM to all (the
        balancer and the nodes first), then SIGKILL to any still alive after ``wait`` seconds."""
        names = [n for n in reversed(ORDER) if self.pid(n) is not None]
        for name in names:
            self.send(name, signal.SIGTERM)
        deadline = time.monotonic() + wait
        for name in names:
            self.kill(name, signal.SIGTERM, wait=max(0.0, deadline - time.monotonic()))

    def status(self) -> dict[str, bool]:
        """Which of the cluster's processes are alive."""
        return {name: bool((pid := self.pid(name)) and _alive(pid)) for name in ORDER}


def _tool(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin:/sbin")
    if found is None:
        raise ClusterError(f"{name} is not installed (apt-get install haproxy pgbouncer redis)")
    return found


def _unprivileged() -> list[str]:
    """PgBouncer refuses to run as root: there (a container, CI) it drops to an ordinary user
    after reading its configuration (``-u``)."""
    if os.geteuid() != 0:
        return []
    import pwd

    for user in (os.environ.get("CLUSTER_PGBOUNCER_USER", ""), "postgres", "nobody"):
        try:
            if user:
                pwd.getpwnam(user)
                return ["-u", user]
        except KeyError:
            continue
    raise ClusterError("PgBouncer may not run as root and no ordinary user was found")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (exited, not yet reaped by its parent) counts as gone.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][:1] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def _status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=3) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except (OSError, ValueError):
        return None


def _write_private(path: Path, text: str) -> None:
    path.touch(mode=0o600, exist_ok=True)
    path.chmod(0o600)
    path.write_text(text)
