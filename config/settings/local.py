"""Development settings: ``make run`` on a laptop (SQLite and eager tasks unless configured)."""

from config.settings.base import *  # noqa: F403
from config.settings.base import BASE_DIR, env

DEBUG = env.bool("DEBUG", default=True)
WHITENOISE_AUTOREFRESH = True
# A development signing key, created on first use in var/ (outside the database, not committed).
LOG_SIGNING_KEY_FILE = env.str(
    "LOG_SIGNING_KEY_FILE", default=str(BASE_DIR / "var" / "log-signing.key")
)
LOG_SIGNING_KEY_CREATE = True
WHITENOISE_USE_FINDERS = True
