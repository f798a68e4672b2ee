# The README's commands. Each target installs what it needs first.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The development server's port: `make run PORT=8105`.
PORT ?= 8000


.PHONY: cluster cluster-stop test-cluster
.PHONY: run test test-quick install lint typecheck format migrate worker beat demo-xstest demo-route-choice benchmarks benchmarks-tiny calibrate db-roles check-db-role

install: $(STAMP)

# Production and development packages both (the Dockerfile installs requirements/lock.txt alone).
$(STAMP): requirements/lock.txt requirements/dev.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements/lock.txt -r requirements/dev.txt
	touch $(STAMP)

run: install
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py load_demo
	$(BIN)/python manage.py runserver 127.0.0.1:$(PORT)

# The whole suite in parallel (pytest-xdist, one worker per core; `make test TEST_WORKERS=0` runs
# it in one process). --dist loadgroup keeps each xdist_group on one worker (tests/conftest.py:
# the real Celery worker's tests share the broker). docs/performance.md has the timings.
TEST_WORKERS ?= auto
test: install
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup

# The same without the tests marked slow (the XSTest demo, the route sweeps): CI runs them all.
test-quick: install
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup -m "not slow and not calibration"

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# mypy over apps/ and config/ (pyproject.toml [tool.mypy]: strict on services, selectors, stats, chain.py).
typecheck: install
	$(BIN)/mypy

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

migrate: install
	$(BIN)/python manage.py migrate --noinput

# Once per database, with a superuser's URL: the owner and runtime roles of DATABASE_OWNER_URL
# and DATABASE_URL, and the database (docs/deploy.md).
db-roles: install
	@test -n "$(DATABASE_ADMIN_URL)" || { echo "set DATABASE_ADMIN_URL to a superuser's postgres:// URL"; exit 2; }
	$(BIN)/python manage.py db_roles_create --admin-url "$(DATABASE_ADMIN_URL)"

check-db-role: install
	$(BIN)/python manage.py check_db_role

worker: install
	$(BIN)/celery -A config worker -l info

beat: install
	$(BIN)/celery -A config beat -l info

demo-xstest: install
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py demo_xstest

.PHONY: demo-crucible demo-route-choice demo-fidelity demo-comparison
demo-crucible: install
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py demo_crucible
demo-route-choice: install
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py demo_route_choice
demo-fidelity: install
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py demo_fidelity
demo-comparison: install
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py demo_comparison

benchmarks: install
	$(BIN)/python -m pytest tests/benchmarks -p no:randomly -s -o addopts=""

# Every benchmark once at a tiny size, so none rots unnoticed (CI runs this; figures mean nothing).
benchmarks-tiny: install
	BENCHMARK_SIZE=tiny $(BIN)/python -m pytest tests/benchmarks -p no:randomly -o addopts="" -q

# The interval calibration suite (tests/calibration/, docs/analysis.md): each design is simulated
# once, by the test that asserts its target, and the session writes the table into
# docs/analysis.md from those runs. 10-17 minutes of CPU; no per-test timeout (pyproject.toml:
# timeout = 300), because on a loaded machine a design may take many times its CPU time in wall
# time. Niced, so that it yields to interactive work.
calibrate: install
	nice -n 10 $(BIN)/python -m pytest tests/calibration -m calibration -p no:randomly \
		-o addopts="-ra --strict-markers" -o timeout=0 --calibration-docs=docs/analysis.md

# Two web nodes behind HAProxy, PgBouncer in transaction mode, two Celery workers, beat and Redis
# on this machine (docs/cluster.md): DATABASE_URL (the runtime role) and DATABASE_OWNER_URL (the
# owner, for migrate) name the PostgreSQL; CLUSTER_HTTP_PORT, CLUSTER_NODE_PORTS,
# CLUSTER_PGBOUNCER_PORT, CLUSTER_REDIS_PORT, CLUSTER_STATS_PORT and CLUSTER_DIR move it.
cluster: install
	$(BIN)/python manage.py cluster start

cluster-stop:
	$(BIN)/python manage.py cluster stop

# The `cluster` marker's tests: they start a cluster of their own on free ports against the test
# database, and stop it at the end (tests/cluster/conftest.py).
test-cluster: install
	$(BIN)/python -m pytest tests/cluster -m cluster -p no:randomly -o addopts="-ra --strict-markers"
