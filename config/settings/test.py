"""Test settings: the suite runs on SQLite by default and on PostgreSQL/Redis when configured.

Tasks run eagerly here; the tests that prove the real path start a real Celery worker against
Redis themselves (they are marked ``redis``).
"""

import base64
import tempfile

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from config.settings.base import *  # noqa: F403


def _ephemeral_signing_key() -> str:
    raw = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    return base64.b64encode(raw).decode()


DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CELERY_TASK_ALWAYS_EAGER = True
# Eager runs compute inside the test's transaction: no heartbeat thread (its own connection
# would not see the run); tests that need it turn it on.
ANALYSIS_HEARTBEAT_INTERVAL_SECONDS = 0
PREREGISTRY_TEST_FLUSH_BYPASSES_GUARDS = True
# A fresh checkpoint signing key for each test session, never written anywhere.
LOG_SIGNING_KEY = _ephemeral_signing_key()
# The signer's state (its last signed tree per log) outside the database; tests/conftest.py
# gives each test its own folder.
LOG_SIGNING_STATE_DIR = tempfile.mkdtemp(prefix="preregistry-signer-state-")
# Static files come from the finders, not a collected STATIC_ROOT.
WHITENOISE_AUTOREFRESH = True
WHITENOISE_USE_FINDERS = True
# The suite sends thousands of API requests a minute as one user; the throttles' own test
# lowers the rates again.
REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] = {  # noqa: F405
    "anon": "100000/minute",
    "user": "100000/minute",
}
