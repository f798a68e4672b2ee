"""Test settings: the suite runs on SQLite by default and on PostgreSQL/Redis when configured.

Tasks run eagerly here; the tests that prove the real path start a real Celery worker against
Redis themselves (they are marked ``redis``).
"""

from config.settings.base import *  # noqa: F403

DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CELERY_TASK_ALWAYS_EAGER = True
PREREGISTRY_TEST_FLUSH_BYPASSES_GUARDS = True
# Static files come from the finders, not a collected STATIC_ROOT.
WHITENOISE_AUTOREFRESH = True
WHITENOISE_USE_FINDERS = True
# The suite sends thousands of API requests a minute as one user; the throttles' own test
# lowers the rates again.
REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] = {  # noqa: F405
    "anon": "100000/minute",
    "user": "100000/minute",
}
