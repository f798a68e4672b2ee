"""Analysis runs: one execution of a frozen version's analysis plan by a Celery worker.

A run is requested (``queued``), claimed by exactly one worker (``running``, with progress and a
heartbeat), and ends ``succeeded`` or ``failed``. Its outcome — the hash of the inputs it read,
the hash of its result document, the finishing time — is written exactly once, in the same
transaction that stores the inputs and the result as ``protocols.Blob``s, so no partial result
can exist. On PostgreSQL a trigger (migration 0002) refuses to change a run's hashes once set,
to change a finished run at all, and to delete runs.
"""

from django.conf import settings
from django.db import models

from apps.protocols.models import Blob, ProtocolVersion


class RunState(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"


FINISHED_STATES = (RunState.SUCCEEDED, RunState.FAILED)


def _document(column: str, help_text: str) -> "models.ForeignKey[Blob | None, Blob | None]":
    """A document a run or a diagnosis writes once, in the transaction that finishes it: a
    ``Blob`` (kept forever, so protected), null until then, in a column named for the hash it
    holds (``column``)."""
    return models.ForeignKey(
        Blob,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        db_column=column,
        help_text=help_text,
    )


class AnalysisRun(models.Model):
    """One run of a version's analysis plan (pipeline ``kind``: ``opb``, ``xstest``, …).

    ``parameters`` is the snapshot of the plan's parameters (name → value text) the run used and
    ``seed`` the seed it used; ``protocol_sha256`` is the frozen version's hash. ``attempts``
    counts claims: a worker that dies mid-run leaves the run ``running`` with a stale heartbeat,
    and the reaper hands it to another worker (``attempts`` + 1) or fails it.
    """

    version = models.ForeignKey(
        ProtocolVersion, on_delete=models.PROTECT, related_name="analysis_runs"
    )
    number = models.PositiveIntegerField(help_text="1, 2, … per version.")
    kind = models.CharField(max_length=32, help_text="The pipeline that computes the result.")
    state = models.CharField(max_length=16, choices=RunState.choices, default=RunState.QUEUED)
    progress = models.PositiveSmallIntegerField(default=0, help_text="Percent done, 0–100.")
    progress_message = models.CharField(max_length=200, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0, help_text="How often it was claimed.")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    queued_at = models.DateTimeField(help_text="When it last entered the queue.")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    protocol_sha256 = models.CharField(max_length=64)
    parameters = models.JSONField(default=dict)
    seed = models.BigIntegerField()
    inputs = _document(
        "input_sha256",
        "The canonical JSON of the data the run read (its hash is the input hash).",
    )
    result = _document("result_sha256", "The result document, canonical JSON.")
    error = models.TextField(blank=True)
    rerun_of = models.ForeignKey(
        "self", on_delete=models.PROTECT, null=True, blank=True, related_name="reruns"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["version", "number"], name="analysisrun_unique_number"),
            models.CheckConstraint(
                condition=models.Q(progress__lte=100), name="analysisrun_progress_percent"
            ),
            # A succeeded run has both hashes; any other run has no result.
            models.CheckConstraint(
                condition=(
                    models.Q(state="succeeded", inputs__isnull=False, result__isnull=False)
                    | (~models.Q(state="succeeded") & models.Q(result__isnull=True))
                ),
                name="analysisrun_result_iff_succeeded",
            ),
        ]
        indexes = [
            # Serves the reaper: running runs by heartbeat, queued runs by queue time.
            models.Index(fields=["state", "heartbeat_at"], name="analysisrun_state_heartbeat"),
        ]
        ordering = ["version", "-number"]

    def __str__(self) -> str:
        return f"analysis run {self.number} of version {self.version_id}"

    @property
    def input_sha256(self) -> str:
        return self.inputs_id or ""

    @property
    def result_sha256(self) -> str:
        return self.result_id or ""

    @property
    def is_finished(self) -> bool:
        return self.state in FINISHED_STATES


class DiagnosisState(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class DesignDiagnosis(models.Model):
    """One design diagnosis of a draft (issue #35): its declared world simulated ``sims`` times
    through the plan's own pipeline by a Celery worker (``apps.analysis.diagnosis``).

    ``world`` is the world as the PI declared it (the result document holds it filled with the
    defaults); ``size`` and ``size_values`` name the sample-size curve, if any. The result is a
    canonical JSON ``Blob``; the draft's latest succeeded diagnosis is part of its frozen
    document (its hash, world and seed). A diagnosis never changes a version: it is not under
    the frozen-version guard, and one that finishes after its draft was frozen is refused.
    """

    version = models.ForeignKey(
        ProtocolVersion, on_delete=models.PROTECT, related_name="design_diagnoses"
    )
    number = models.PositiveIntegerField(help_text="1, 2, … per version.")
    state = models.CharField(
        max_length=16, choices=DiagnosisState.choices, default=DiagnosisState.QUEUED
    )
    progress = models.PositiveSmallIntegerField(default=0, help_text="Percent done, 0–100.")
    progress_message = models.CharField(max_length=200, blank=True)
    cancel_requested = models.BooleanField(default=False)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    queued_at = models.DateTimeField(
        null=True, blank=True, help_text="When its message was last sent to the workers."
    )
    attempts = models.PositiveSmallIntegerField(
        default=0, help_text="Claims by a worker (a killed worker's diagnosis is claimed again)."
    )
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="The running worker's last sign of life."
    )
    finished_at = models.DateTimeField(null=True, blank=True)
    world = models.JSONField(default=dict, blank=True, help_text="The world as declared.")
    seed = models.BigIntegerField()
    sims = models.PositiveIntegerField()
    size = models.CharField(max_length=64, blank=True, help_text="The curve's size parameter.")
    size_values = models.JSONField(default=list, blank=True)
    result = _document("result_sha256", "The diagnosis document, canonical JSON.")
    error = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["version", "number"], name="designdiagnosis_unique_number"
            ),
            models.CheckConstraint(
                condition=models.Q(progress__lte=100), name="designdiagnosis_progress_percent"
            ),
            models.CheckConstraint(
                condition=(
                    models.Q(state="succeeded", result__isnull=False)
                    | (~models.Q(state="succeeded") & models.Q(result__isnull=True))
                ),
                name="designdiagnosis_result_iff_succeeded",
            ),
        ]
        ordering = ["version", "-number"]

    def __str__(self) -> str:
        return f"design diagnosis {self.number} of version {self.version_id}"

    @property
    def is_finished(self) -> bool:
        return self.state in (
            DiagnosisState.SUCCEEDED,
            DiagnosisState.FAILED,
            DiagnosisState.CANCELLED,
        )
