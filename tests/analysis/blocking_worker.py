"""A Celery app for the worker-kill test: the project's app plus a pipeline that blocks.

Started as ``celery -A tests.analysis.blocking_worker worker --pool=solo`` in a subprocess. The
``_blocking`` pipeline collects like ``opb`` and, while the file named by
``ANALYSIS_TEST_GATE`` exists, reports progress and waits — long enough to be killed mid-run;
with the file gone it computes the real OPB result.
"""

import os
import time

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")

import django

django.setup()

from apps.analysis.pipelines.base import Pipeline, register_pipeline  # noqa: E402
from apps.studies.opb import pipeline as opb  # noqa: E402
from config.celery import app  # noqa: E402  (celery -A finds it here)
from tests.factories import opb_declaration_as  # noqa: E402

KIND = "_blocking"

# The test settings run tasks eagerly; these processes are a deployment's worker and beat, whose
# tasks (beat's schedule, the reaper's requeue) go through the broker.
app.conf.task_always_eager = False


def compute(inputs, *, parameters, seed, progress):
    gate = os.environ.get("ANALYSIS_TEST_GATE", "")
    while gate and os.path.exists(gate):
        progress(50, "blocking")
        time.sleep(0.2)
    return opb.compute(inputs, parameters=parameters, seed=seed, progress=progress)


PIPELINE = register_pipeline(
    Pipeline(
        kind=KIND,
        title="blocks",
        collect=opb.collect,
        compute=compute,
        tidy=opb.tidy,
        # Declared as opb is, so that a study naming it passes the freeze gate.
        declaration=opb_declaration_as(KIND),
    )
)
