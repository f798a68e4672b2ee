"""Settings come from the environment in one place; production refuses to start without secrets."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


_CONFIGURED = {"DATABASE_URL", "REDIS_URL", "SECRET_KEY", "ALLOWED_HOSTS", "DJANGO_SETTINGS_MODULE"}


def _settings_probe(
    module: str, env: dict[str, str], expression: str
) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in _CONFIGURED}
    clean.update(env)
    code = (
        f"import os; os.environ['DJANGO_SETTINGS_MODULE'] = {module!r}; "
        f"from django.conf import settings; print({expression})"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_without_database_url_the_embedded_default_is_sqlite_inside_the_project():
    probe = _settings_probe(
        "config.settings.local",
        {},
        "settings.DATABASES['default']['ENGINE'], settings.DATABASES['default']['NAME']",
    )
    assert probe.returncode == 0, probe.stderr
    assert "sqlite3" in probe.stdout
    assert str(ROOT / "var" / "db.sqlite3") in probe.stdout


def test_with_database_url_the_database_is_postgresql():
    probe = _settings_probe(
        "config.settings.local",
        {"DATABASE_URL": "postgres://postgres@127.0.0.1:5432/anything"},
        "settings.DATABASES['default']['ENGINE']",
    )
    assert probe.stdout.strip() == "django.db.backends.postgresql"


@pytest.mark.parametrize(
    ("env", "eager", "broker"),
    [
        ({}, "True", "memory://"),
        ({"REDIS_URL": "redis://127.0.0.1:6379/5"}, "False", "redis://127.0.0.1:6379/5"),
    ],
)
def test_celery_is_eager_exactly_when_there_is_no_redis(env, eager, broker):
    probe = _settings_probe(
        "config.settings.local",
        env,
        "settings.CELERY_TASK_ALWAYS_EAGER, settings.CELERY_BROKER_URL",
    )
    assert probe.stdout.strip() == f"{eager} {broker}"


@pytest.mark.parametrize("missing", ["SECRET_KEY", "ALLOWED_HOSTS"])
def test_production_refuses_to_start_without_its_secrets(missing):
    env = {"SECRET_KEY": "x" * 60, "ALLOWED_HOSTS": "example.org"}
    del env[missing]
    probe = _settings_probe("config.settings.production", env, "settings.DEBUG")
    assert probe.returncode != 0
    assert "ImproperlyConfigured" in probe.stderr
    assert missing in probe.stderr


def test_production_runs_hardened():
    probe = _settings_probe(
        "config.settings.production",
        {"SECRET_KEY": "x" * 60, "ALLOWED_HOSTS": "example.org"},
        "settings.DEBUG, settings.SESSION_COOKIE_SECURE, settings.CSRF_COOKIE_SECURE, "
        "settings.PASSWORD_HASHERS[0], settings.STORAGES['staticfiles']['BACKEND']",
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.split() == [
        "False",
        "True",
        "True",
        "django.contrib.auth.hashers.Argon2PasswordHasher",
        "apps.core.storage.ForgivingManifestStaticFilesStorage",  # whitenoise's, see its docstring
    ]


def test_production_never_prints_mail_to_the_console():
    # A password-reset link printed into the server's log would hand the account to whoever
    # reads the log: production sends through SMTP (EMAIL_URL, else the local MTA).
    probe = _settings_probe(
        "config.settings.production",
        {"SECRET_KEY": "x" * 60, "ALLOWED_HOSTS": "example.org"},
        "settings.EMAIL_BACKEND",
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.strip() == "django.core.mail.backends.smtp.EmailBackend"
