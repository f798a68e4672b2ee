"""Settings shared by every environment.

Everything that comes from the environment is read here, through one django-environ ``env``
object; the per-environment modules only choose among these values.

- ``DATABASE_URL`` unset: SQLite in ``var/db.sqlite3`` inside the project folder (the embedded
  default that ``make run`` uses on a machine with no PostgreSQL).
- ``REDIS_URL`` unset: Celery runs tasks eagerly in the web process; set: Redis is the broker and
  a real worker runs them.
"""

from datetime import timedelta
from pathlib import Path
from typing import Any

import environ

BASE_DIR = Path(__file__).resolve().parent.parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

SECRET_KEY = env("SECRET_KEY", default="insecure-development-key-do-not-use-in-production")
DEBUG = env.bool("DEBUG", default=False)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

# Where the shared, read-only data sets live (XSTest, reference data). Never copied in.
SHARED_DATA_DIR = Path(
    env("PREREGISTRY_SHARED_DATA", default=str(BASE_DIR.parent / "shared" / "data"))
)
# The largest response file accepted through the page or the API (it is read into memory);
# larger files go through `manage.py import_responses`, which reads from disk.
RESPONSE_UPLOAD_MAX_MB = env.int("PREREGISTRY_UPLOAD_MAX_MB", default=50)
# Limits on an uploaded archive (an Inspect .eval log is a zip), checked from its directory
# before any reader opens it: total uncompressed size (MiB), entries, and compression ratio.
ARCHIVE_MAX_UNCOMPRESSED_MB = env.int("PREREGISTRY_ARCHIVE_MAX_UNCOMPRESSED_MB", default=512)
ARCHIVE_MAX_ENTRIES = env.int("PREREGISTRY_ARCHIVE_MAX_ENTRIES", default=10_000)
ARCHIVE_MAX_RATIO = env.int("PREREGISTRY_ARCHIVE_MAX_RATIO", default=100)
# An Inspect .eval log is read one sample at a time: the largest sample bounds the memory
# (a sample's objects take several times its JSON). A .json log is read whole.
INSPECT_SAMPLE_MAX_MB = env.int("PREREGISTRY_INSPECT_SAMPLE_MAX_MB", default=8)
INSPECT_JSON_MAX_MB = env.int("PREREGISTRY_INSPECT_JSON_MAX_MB", default=16)
# Where an uploaded response file waits between its preview and its confirmation (by SHA-256).
RESPONSE_IMPORT_STAGING_DIR = Path(
    env("PREREGISTRY_IMPORT_STAGING", default=str(BASE_DIR / "var" / "imports"))
)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    # Swagger UI's assets, pinned and served from this site (the schema UI works offline).
    "drf_spectacular_sidecar",
    "django_htmx",
    "simple_history",
    "axes",
    "apps.core",
    "apps.accounts",
    "apps.protocols",
    "apps.items",
    "apps.responses",
    "apps.raters",
    "apps.deviations",
    "apps.analysis",
    # The study kinds (one package each), after the core apps they plug into.
    "apps.studies",
    "apps.registry",
    "apps.demo",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # NUL in a path, query or form → 400; a client gone mid-body → 400; JSON 503 under /api/.
    "apps.core.middleware.RequestGuardMiddleware",
    # A token request to the reviewer queue's next and score skips the page-only middleware below.
    "apps.core.middleware.TokenAPIMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "apps.core.middleware.DomainErrorMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "simple_history.middleware.HistoryRequestMiddleware",
    "apps.core.middleware.CSPMiddleware",
    # Last, as django-axes asks: it answers a locked-out sign-in with its lockout response.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "apps.accounts.context_processors.places",
            ],
        },
    },
]

SQLITE_URL = f"sqlite:///{BASE_DIR / 'var' / 'db.sqlite3'}"
DATABASES = {"default": env.db("DATABASE_URL", default=SQLITE_URL)}
DATABASES["default"]["ATOMIC_REQUESTS"] = False
# Persistent connections: a new PostgreSQL connection costs more than the queue's whole next +
# score cycle, so each gunicorn/Celery worker keeps its own for ``DB_CONN_MAX_AGE`` seconds, and
# checks it is alive before reusing it after an error. Every worker process holds at most one:
# docs/deploy.md ("Database connections") adds them up against PostgreSQL's max_connections.
DATABASES["default"]["CONN_MAX_AGE"] = env.int("DB_CONN_MAX_AGE", default=0)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = env.bool("DB_CONN_HEALTH_CHECKS", default=True)
# Behind PgBouncer in transaction mode (docs/cluster.md) each transaction may run on another
# server connection: nothing may outlive a transaction on the server. Django's server-side
# cursors (``.iterator()`` outside a transaction opens a WITH HOLD cursor) are then turned off,
# and so are prepared statements unless DB_PREPARED_STATEMENTS says otherwise (PgBouncer 1.21+
# with max_prepared_statements > 0 carries them; Debian 12's 1.18 does not).
DB_TRANSACTION_POOLER = env.bool("DB_TRANSACTION_POOLER", default=False)
if DB_TRANSACTION_POOLER:
    DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True
# The reviewer queue's claim and submit run as server-side prepared statements on PostgreSQL
# (planned once per connection); off for a pooler that cannot carry them (docs/deploy.md).
DB_PREPARED_STATEMENTS = env.bool("DB_PREPARED_STATEMENTS", default=not DB_TRANSACTION_POOLER)
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and DB_PREPARED_STATEMENTS:
    # Django's own cursors bind parameters client-side and are never prepared whatever this
    # says; the threshold (Django's default None turns preparing off) only lets the statements
    # that ask for it with prepare=True be prepared, and never prepares anything by count.
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault("prepare_threshold", 10**9)
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # SQLite serialises writers; a generous timeout keeps concurrent requests from failing.
    # IMMEDIATE takes the write lock when a transaction begins, so a transaction that reads and
    # then writes waits out the timeout instead of failing at once with "database is locked"
    # (a demo command run while `make run` serves a request).
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"timeout": 20, "transaction_mode": "IMMEDIATE"}
    )
    (BASE_DIR / "var").mkdir(exist_ok=True)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Two PostgreSQL roles (docs/deploy.md): DATABASE_URL is the runtime role's connection, used by
# the web application and the workers; it is neither a superuser nor the tables' owner, and holds
# only the DML it needs. DATABASE_OWNER_URL is the owner role's, used only by `migrate` (which
# then grants the runtime role its privileges) and, in tests, to create and empty the test
# database. Unset: one connection does both (the SQLite default, or a single-role development
# database, which `manage.py check_db_role` reports).
DATABASE_OWNER_URL = env.str("DATABASE_OWNER_URL", default="")
DATABASE_OWNER = environ.Env.db_url_config(DATABASE_OWNER_URL) if DATABASE_OWNER_URL else None
DATABASE_RUNTIME_ROLE = DATABASES["default"].get("USER", "")
# Whether /healthz answers 503 when the runtime connection could switch the guards off
# (superuser, table owner, ...). On in production settings; elsewhere it is reported only.
DATABASE_ROLE_ENFORCED = env.bool("PREREGISTRY_ENFORCE_DB_ROLE", default=False)

AUTH_USER_MODEL = "accounts.User"
# django-axes first: it refuses a sign-in while the username or the address is locked out.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
LOGIN_URL = "accounts:login"
LOGIN_REDIRECT_URL = "accounts:home"
LOGOUT_REDIRECT_URL = "accounts:login"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.Argon2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
]

LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
DATA_UPLOAD_MAX_MEMORY_SIZE = 50 * 1024 * 1024
# An uploaded file larger than this waits in a temporary file, not in the worker's memory.
FILE_UPLOAD_MAX_MEMORY_SIZE = 2_621_440

REST_FRAMEWORK: dict[str, Any] = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "apps.core.apis.exception_handler",
    "DEFAULT_PARSER_CLASSES": [
        "apps.core.apis.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Preregistry API",
    "DESCRIPTION": "Preregistered studies of AI-system behaviour: protocols, freeze gate, blind "
    "review, sealed analysis and the tamper-evident deviation log.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "FamilyRoleEnum": "apps.items.models.FamilyRole",
        "FactorRoleEnum": "apps.items.models.FactorRole",
        "MemberRoleEnum": "apps.accounts.models.Role",
        # A version's status as members see it, and as the public registry shows it (a draft is
        # never public).
        "VersionStatusEnum": ["draft", "frozen", "superseded", "withdrawn"],
        "PublicVersionStatusEnum": ["frozen", "superseded", "withdrawn"],
    },
    # The schema UI's assets come from drf-spectacular-sidecar (pinned in requirements/lock.txt)
    # and are served by this site, never by a CDN: /api/schema/ui/ works offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# Celery: JSON only; a task is acknowledged after it finishes, and a worker that dies mid-task
# hands the message back, so a killed analysis run is picked up again rather than lost.
REDIS_URL = env("REDIS_URL", default="")
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = REDIS_URL or None
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=15 * 60)
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=16 * 60)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 60 * 60}
CELERY_RESULT_EXPIRES = 24 * 60 * 60
CELERY_BEAT_SCHEDULE: dict = {
    # Expired reservations return to the pool even when no reviewer asks for a task.
    "raters-assignments-expire": {"task": "raters.assignments_expire", "schedule": 60.0},
    # Analysis runs whose worker died: requeue (or fail after 3 claims); resend lost messages.
    # Every 15 s, so a killed run is requeued within timeout + 15 s (45 s; docs/analysis.md).
    "analysis-runs-reap": {"task": "analysis.runs_reap", "schedule": 15.0},
}
# Log entries staged under contention whose writer died before chaining them (a live writer
# chains them as its transaction commits): chained within this many seconds
# (apps/deviations/services.py, docs/deviation-log.md "Appends under contention").
CELERY_BEAT_SCHEDULE["deviations-pending-sequence"] = {
    "task": "deviations.pending_sequence",
    "schedule": 5.0,
}
# Signed checkpoints of every log's head (apps/deviations/checkpoints.py, docs/deploy.md).
CELERY_BEAT_SCHEDULE["deviations-checkpoints-write"] = {
    "task": "deviations.checkpoints_write",
    "schedule": float(env.int("LOG_CHECKPOINT_INTERVAL_SECONDS", default=60 * 60)),
}
# Embargoes of published versions end by themselves on their day (apps/registry/tasks.py).
CELERY_BEAT_SCHEDULE["registry-embargoes-end"] = {
    "task": "registry.embargoes_end",
    "schedule": 600.0,
}
# The Ed25519 key that signs checkpoints: never in the database. PEM or base64 of the 32 raw
# bytes, in LOG_SIGNING_KEY or in the file LOG_SIGNING_KEY_FILE; unset: no checkpoints.
LOG_SIGNING_KEY = env.str("LOG_SIGNING_KEY", default="")
LOG_SIGNING_KEY_FILE = env.str("LOG_SIGNING_KEY_FILE", default="")
LOG_SIGNING_KEY_CREATE = False
# Public keys (base64, raw) of earlier signing keys: their checkpoints still verify (rotation).
LOG_SIGNING_PREVIOUS_PUBLIC_KEYS = env.list("LOG_SIGNING_PREVIOUS_PUBLIC_KEYS", default=[])
# Where the signer keeps, per protocol log, the last (size, root) it signed: outside the
# database, beside its key. Unset: "<LOG_SIGNING_KEY_FILE>.state/" (required with LOG_SIGNING_KEY).
LOG_SIGNING_STATE_DIR = env.str("LOG_SIGNING_STATE_DIR", default="")
# Checkpoint origins (C2SP tlog-checkpoint) are "<LOG_ORIGIN>/<protocol code>", one log each.
LOG_ORIGIN = env.str("LOG_ORIGIN", default="preregistry.local/log")
# Where each checkpoint goes as it is signed, outside the database: a witness speaking C2SP
# tlog-witness (its submission prefix; `manage.py log_witness` is one), and/or a folder the
# signed notes are written into (e.g. a mount another organisation controls).
LOG_WITNESS_URL = env.str("LOG_WITNESS_URL", default="")
LOG_WITNESS_DIR = env.str("LOG_WITNESS_DIR", default="")
LOG_WITNESS_TIMEOUT_SECONDS = env.int("LOG_WITNESS_TIMEOUT_SECONDS", default=10)
# A running analysis run with no heartbeat for this long counts as abandoned by its worker. A
# thread of the worker beats every ANALYSIS_HEARTBEAT_INTERVAL_SECONDS while the run computes
# (0: only progress reports beat, as in the eager test settings), so a live run never goes stale.
ANALYSIS_HEARTBEAT_TIMEOUT_SECONDS = env.int("ANALYSIS_HEARTBEAT_TIMEOUT_SECONDS", default=30)
ANALYSIS_HEARTBEAT_INTERVAL_SECONDS = env.int("ANALYSIS_HEARTBEAT_INTERVAL_SECONDS", default=5)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", default="INFO")},
    "loggers": {"django.db.backends": {"level": "INFO"}},
}

# Sign-in throttling (django-axes): after AXES_FAILURE_LIMIT wrong passwords in a row for one
# username, or from one address, that username or address is locked out for the cool-off.
AXES_FAILURE_LIMIT = env.int("AXES_FAILURE_LIMIT", default=10)
AXES_COOLOFF_TIME = timedelta(minutes=env.int("AXES_COOLOFF_MINUTES", default=15))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_ON_SUCCESS = True
# Behind a proxy set AXES_IPWARE_PROXY_COUNT so the client's address, not the proxy's, counts.
AXES_IPWARE_PROXY_COUNT = env.int("AXES_IPWARE_PROXY_COUNT", default=0) or None
AXES_IPWARE_META_PRECEDENCE_ORDER = ["HTTP_X_FORWARDED_FOR", "REMOTE_ADDR"]

# The cache holds the API throttles' counters: set CACHE_URL (e.g. redis://…/1) to share them
# between the web server's processes; the default counts per process.
CACHES = {"default": env.cache("CACHE_URL", default="locmemcache://")}
# With a shared cache, sessions are read from it (written through to the database): a signed-in
# request makes one query fewer. A per-process cache would keep a signed-out session alive in
# the other processes, so without one they stay in the database alone.
if CACHES["default"]["BACKEND"] != "django.core.cache.backends.locmem.LocMemCache":
    SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"

# API throttles (DRF): generous, per signed-in user and per anonymous address; a client past
# them gets 429 with Retry-After.
REST_FRAMEWORK["DEFAULT_THROTTLE_CLASSES"] = [
    "rest_framework.throttling.AnonRateThrottle",
    "rest_framework.throttling.UserRateThrottle",
]
REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] = {
    "anon": env("API_THROTTLE_ANON", default="120/minute"),
    "user": env("API_THROTTLE_USER", default="1200/minute"),
}

# Content-Security-Policy (django-csp): scripts and styles from this site only, no inline script
# and no inline event handler anywhere (templates load static/js/*.js instead).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

# Abandoned import previews (uploaded, never confirmed) are deleted after this many hours.
RESPONSE_IMPORT_PREVIEW_MAX_AGE_HOURS = env.int("PREREGISTRY_IMPORT_PREVIEW_MAX_AGE_HOURS", 24)
CELERY_BEAT_SCHEDULE["responses-import-previews-sweep"] = {
    "task": "responses.import_previews_sweep",
    "schedule": 60.0 * 60,
}

# E-mail (password reset links): EMAIL_URL, e.g. smtp+tls://user:pass@host:587; in development
# the console backend prints each message where the server runs.
vars().update(env.email_url("EMAIL_URL", default="consolemail://"))
DEFAULT_FROM_EMAIL = env("DEFAULT_FROM_EMAIL", default="preregistry@localhost")
