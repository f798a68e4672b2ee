"""Production settings: secrets have no default, DEBUG is off, cookies are secure.

Refuses to start without ``SECRET_KEY`` and ``ALLOWED_HOSTS`` (django-environ raises
ImproperlyConfigured naming the missing variable).
"""

from config.settings.base import *  # noqa: F403
from config.settings.base import env

DEBUG = False
SECRET_KEY = env("SECRET_KEY")
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS")
# A runtime database role that could switch the guards off makes /healthz answer 503.
DATABASE_ROLE_ENFORCED = env.bool("PREREGISTRY_ENFORCE_DB_ROLE", default=True)

SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=60 * 60 * 24 * 30)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
# Submitting a domain to the browsers' HSTS preload list is the deployer's decision (it cannot be
# undone quickly), so it is opt-in and check --deploy is not asked to insist on it.
SILENCED_SYSTEM_CHECKS = [] if SECURE_HSTS_PRELOAD else ["security.W021"]
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

# Persistent database connections (base.py reads DB_CONN_MAX_AGE; here the default is 10 minutes,
# never 0: one connection per request was 40 % of the queue's cost, docs/performance.md).
DATABASES["default"]["CONN_MAX_AGE"] = env.int("DB_CONN_MAX_AGE", default=600)  # noqa: F405
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True  # noqa: F405

PASSWORD_HASHERS = ["django.contrib.auth.hashers.Argon2PasswordHasher"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "apps.core.storage.ForgivingManifestStaticFilesStorage"},
}

# E-mail: never the development console backend here, which would print every password-reset
# link into the server's log. EMAIL_URL names the relay; without it, the local MTA.
vars().update(env.email_url("EMAIL_URL", default="smtp://localhost:25"))
