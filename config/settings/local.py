"""Development settings: ``make run`` on a laptop (SQLite and eager tasks unless configured)."""

from config.settings.base import *  # noqa: F403
from config.settings.base import env

DEBUG = env.bool("DEBUG", default=True)
WHITENOISE_AUTOREFRESH = True
WHITENOISE_USE_FINDERS = True
