"""The Celery application. Configuration lives in Django settings under ``CELERY_*``.

A worker: ``celery -A config worker -l info``; the schedule (expired reservations and the like):
``celery -A config beat``.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

app = Celery("preregistry")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.task(name="preregistry.ping")
def ping() -> str:
    """Answer ``"pong"``: lets health checks and tests see a worker finish a task."""
    return "pong"
