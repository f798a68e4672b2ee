"""What `make cluster` writes into its run directory (apps/core/cluster.py), and the settings
behind a transaction pooler; the cluster itself is exercised by tests/cluster (make test-cluster).
"""

import json
import stat
import subprocess
import sys

from apps.core.cluster import ROOT, Cluster


def _cluster(tmp_path, url="postgres://app:s%40cret@db.example:5433/prereg") -> Cluster:
    cluster = Cluster(
        run_dir=tmp_path / "run",
        database_url=url,
        http_port=18100,
        node_ports=(18101, 18102),
        pgbouncer_port=16432,
        stats_port=18104,
        redis_port=16390,
    )
    cluster.configure()
    return cluster


def test_the_nodes_reach_postgresql_through_pgbouncer_as_the_runtime_role(tmp_path):
    cluster = _cluster(tmp_path)
    env = cluster.environment()
    assert env["DATABASE_URL"] == "postgres://app:s%40cret@127.0.0.1:16432/prereg"
    assert env["DB_TRANSACTION_POOLER"] == "true"
    assert "DATABASE_OWNER_URL" not in env  # only migrate, direct, holds the owner's URL
    ini = (cluster.run_dir / "pgbouncer.ini").read_text()
    assert "pool_mode = transaction" in ini
    assert "prereg = host=db.example port=5433 dbname=prereg user=app" in ini
    assert "auth_type = scram-sha-256" in ini  # a password is given: not trust
    users = cluster.run_dir / "userlist.txt"
    assert users.read_text() == '"app" "s@cret"\n'
    assert stat.S_IMODE(users.stat().st_mode) == 0o600


def test_every_process_shares_the_secrets_the_cache_and_the_staging_folder(tmp_path):
    cluster = _cluster(tmp_path)
    env = cluster.environment()
    assert len(env["SECRET_KEY"]) > 50
    assert env["CACHE_URL"] == env["REDIS_URL"] == "redis://127.0.0.1:16390/0"
    assert env["PREREGISTRY_IMPORT_STAGING"] == str(cluster.shared_dir / "imports")
    written = dict(
        line.split("=", 1) for line in (cluster.run_dir / "cluster.env").read_text().splitlines()
    )
    assert written["SECRET_KEY"] == env["SECRET_KEY"]
    # A second start keeps the secrets (sessions signed before it stay valid).
    assert _cluster(tmp_path).environment()["SECRET_KEY"] == env["SECRET_KEY"]


def test_the_balancers_own_errors_are_json(tmp_path):
    cluster = _cluster(tmp_path)
    config = (cluster.run_dir / "haproxy.cfg").read_text()
    assert "server node1 127.0.0.1:18101" in config and "server node2 127.0.0.1:18102" in config
    for status in (502, 503, 504):
        raw = (cluster.run_dir / "errors" / f"{status}.http").read_bytes().decode()
        head, body = raw.split("\r\n\r\n", 1)
        assert head.startswith(f"HTTP/1.0 {status} ")
        assert "Content-Type: application/json" in head
        assert json.loads(body)["detail"]


def _settings(**env: str) -> dict:
    code = (
        "import json; from config.settings import base as s; "
        "print(json.dumps([s.DB_PREPARED_STATEMENTS, s.DATABASES['default']]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "DATABASE_URL": "postgres://app@127.0.0.1:6432/x", **env},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    prepared, database = json.loads(out)
    return {"prepared": prepared, **database}


def test_behind_a_transaction_pooler_nothing_outlives_a_transaction():
    direct = _settings()
    assert direct["prepared"] is True and direct["OPTIONS"]["prepare_threshold"] > 0
    assert not direct.get("DISABLE_SERVER_SIDE_CURSORS")
    pooled = _settings(DB_TRANSACTION_POOLER="true")
    assert pooled["prepared"] is False
    assert "prepare_threshold" not in pooled.get("OPTIONS", {})  # psycopg's None: never
    assert pooled["DISABLE_SERVER_SIDE_CURSORS"] is True
    # PgBouncer 1.21+ with max_prepared_statements carries them: asked for, they come back.
    assert _settings(DB_TRANSACTION_POOLER="true", DB_PREPARED_STATEMENTS="true")["prepared"]
