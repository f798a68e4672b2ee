"""Blind rating: the frozen rubric, scoring tasks, assignments (reservations) and scores.

A reviewer reaches a task only by its opaque ``token``; nothing on a task, assignment or score
that a reviewer sees names the family, level, condition or evaluand. Scores are append-only: a
correction is a new score that names the one it corrects and why.
"""

from django.conf import settings
from django.db import models

from apps.protocols.models import Protocol, ProtocolVersion
from apps.responses.models import Response


class Rubric(models.Model):
    """How responses are scored in a version; frozen with it."""

    version = models.OneToOneField(ProtocolVersion, on_delete=models.CASCADE, related_name="rubric")
    name = models.CharField(max_length=200)
    template = models.CharField(max_length=32, blank=True)
    instructions = models.TextField(blank=True)

    def __str__(self) -> str:
        return self.name


class FieldKind(models.TextChoices):
    CHECKLIST = "checklist", "Checklist of the cell's required units"
    BINARY = "binary", "Binary"
    COUNT = "count", "Count"
    CATEGORICAL = "categorical", "Categorical"
    ORDINAL = "ordinal", "Ordinal"
    NUMBER = "number", "Number"
    QUOTE = "quote", "Quote"


class Derivation(models.TextChoices):
    """How a derived field is computed from another field at submission (never typed)."""

    NONE = "", "Typed by the reviewer"
    PER_100_WORDS = "per_100_words", "Per 100 words of the response (from a count)"
    ATTENUATION = "attenuation", "1 − supplied / required units (from a checklist)"
    EXECUTABLE_ATTENUATION = (
        "executable_attenuation",
        "1 − supplied / required executable units (from a checklist)",
    )


class Disagreement(models.TextChoices):
    """How the plan's disagreement rule compares this field across the primary scores."""

    NONE = "", "Not compared"
    EXACT = "exact", "Any difference"
    DELTA = "delta", "Difference greater than the plan's δ"


class RubricField(models.Model):
    """One field a reviewer fills in. ``choices`` (categorical, ordinal) is a list of
    ``{"value": ..., "label": ...}`` in order; ``group`` gathers fields such as one axis of seed
    003's rubric (observed, expected band, pass, quote).

    A field with a ``derivation`` is not typed: it is computed at submission from the field named
    by ``derived_from`` (OPB-01's H per 100 words from the hedge count, F_att from the checklist).
    ``disagreement`` says how the plan's disagreement rule compares the field across primary
    scores; a disagreement creates an adjudication task.
    """

    version = models.ForeignKey(
        ProtocolVersion, on_delete=models.CASCADE, related_name="rubric_fields"
    )
    rubric = models.ForeignKey(Rubric, on_delete=models.CASCADE, related_name="fields")
    position = models.PositiveSmallIntegerField()
    name = models.SlugField(max_length=64)
    label = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, choices=FieldKind.choices)
    choices = models.JSONField(default=list, blank=True)
    required = models.BooleanField(default=True)
    minimum = models.DecimalField(max_digits=20, decimal_places=6, null=True, blank=True)
    maximum = models.DecimalField(max_digits=20, decimal_places=6, null=True, blank=True)
    group = models.CharField(max_length=64, blank=True)
    help_text = models.CharField(max_length=500, blank=True)
    derivation = models.CharField(
        max_length=32, choices=Derivation.choices, blank=True, default=Derivation.NONE
    )
    derived_from = models.SlugField(max_length=64, blank=True)
    disagreement = models.CharField(
        max_length=8, choices=Disagreement.choices, blank=True, default=Disagreement.NONE
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["rubric", "name"], name="rubricfield_unique_name"),
            models.UniqueConstraint(
                fields=["rubric", "position"], name="rubricfield_unique_position"
            ),
        ]
        ordering = ["rubric", "position"]

    def __str__(self) -> str:
        return self.name


class TaskKind(models.TextChoices):
    PRIMARY = "primary", "Independent score"
    ADJUDICATION = "adjudication", "Adjudication"


class TaskState(models.TextChoices):
    OPEN = "open", "Open"
    ASSIGNED = "assigned", "Assigned"
    DONE = "done", "Done"


class ScoringTask(models.Model):
    """One score wanted for one response: k primary tasks per response, plus an adjudication task
    when the plan's disagreement rule fires. ``shuffle_key`` fixes the presentation order from the
    plan's seed."""

    version = models.ForeignKey(
        ProtocolVersion, on_delete=models.PROTECT, related_name="scoring_tasks"
    )
    response = models.ForeignKey(Response, on_delete=models.PROTECT, related_name="scoring_tasks")
    kind = models.CharField(max_length=16, choices=TaskKind.choices, default=TaskKind.PRIMARY)
    slot = models.PositiveSmallIntegerField()
    token = models.CharField(max_length=32, unique=True)
    state = models.CharField(max_length=16, choices=TaskState.choices, default=TaskState.OPEN)
    shuffle_key = models.BigIntegerField()
    # 0 while another task of the same response is done (partly scored responses are finished
    # first), 1 otherwise. Kept on the row so that the queue's ORDER BY is an index scan.
    queue_rank = models.PositiveSmallIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["response", "kind", "slot"], name="scoringtask_unique_slot"
            ),
        ]
        indexes = [
            models.Index(fields=["version", "state", "shuffle_key"]),
            # Serves the queue: open tasks of a version, partly scored first, in shuffle order.
            models.Index(
                fields=["version", "queue_rank", "shuffle_key", "id"],
                condition=models.Q(state="open"),
                name="scoringtask_queue",
            ),
        ]

    def __str__(self) -> str:
        return f"task {self.token}"


class AssignmentOutcome(models.TextChoices):
    ACTIVE = "active", "Active"
    SUBMITTED = "submitted", "Submitted"
    EXPIRED = "expired", "Expired"
    RELEASED = "released", "Released"


class Assignment(models.Model):
    """A reservation of one task for one reviewer, with an expiry."""

    task = models.ForeignKey(ScoringTask, on_delete=models.PROTECT, related_name="assignments")
    version = models.ForeignKey(ProtocolVersion, on_delete=models.PROTECT, related_name="+")
    response = models.ForeignKey(Response, on_delete=models.PROTECT, related_name="+")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="assignments"
    )
    reserved_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(
        max_length=16, choices=AssignmentOutcome.choices, default=AssignmentOutcome.ACTIVE
    )

    class Meta:
        constraints = [
            # At most one live reservation per task, and per reviewer in a version.
            models.UniqueConstraint(
                fields=["task"],
                condition=models.Q(outcome="active"),
                name="assignment_one_active_per_task",
            ),
            models.UniqueConstraint(
                fields=["version", "reviewer"],
                condition=models.Q(outcome="active"),
                name="assignment_one_active_per_reviewer",
            ),
        ]
        indexes = [
            models.Index(fields=["response", "reviewer"]),
            models.Index(fields=["outcome", "expires_at"]),
        ]

    def __str__(self) -> str:
        return f"assignment of {self.task_id} to {self.reviewer_id}"


class Score(models.Model):
    """A submitted score. Never changed: a correction is a new Score with ``corrects`` and a reason.

    ``values`` maps rubric field names to the reviewer's values; ``idempotency_key`` makes a double
    submit store one score.
    """

    task = models.ForeignKey(ScoringTask, on_delete=models.PROTECT, related_name="scores")
    version = models.ForeignKey(ProtocolVersion, on_delete=models.PROTECT, related_name="+")
    response = models.ForeignKey(Response, on_delete=models.PROTECT, related_name="scores")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="scores"
    )
    values = models.JSONField()
    idempotency_key = models.CharField(max_length=64, unique=True)
    seconds_spent = models.PositiveIntegerField(null=True, blank=True)
    submitted_at = models.DateTimeField(auto_now_add=True)
    corrects = models.OneToOneField(
        "self", on_delete=models.PROTECT, null=True, blank=True, related_name="correction"
    )
    correction_reason = models.TextField(blank=True)

    class Meta:
        constraints = [
            # A task is scored once; later records for it are corrections.
            models.UniqueConstraint(
                fields=["task"],
                condition=models.Q(corrects__isnull=True),
                name="score_one_original_per_task",
            ),
        ]
        indexes = [models.Index(fields=["version", "response"])]

    def __str__(self) -> str:
        return f"score {self.pk} on task {self.task_id}"


class ScoringOpening(models.Model):
    """The act that opens scoring of a frozen version: its existence is the state "open"."""

    version = models.OneToOneField(
        ProtocolVersion, on_delete=models.PROTECT, related_name="scoring_opening"
    )
    opened_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    opened_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"scoring of version {self.version_id} opened"


class StudyQueue(models.Model):
    """What a reviewer sees of a study's scoring queue: a neutral name the PI gives it.

    A reviewer with open tasks in several studies picks one by this name (or takes "any");
    the name is never the protocol's code, title or hypothesis (``study_queue_rename`` refuses
    a name that contains the code or the title), and the picker's value is ``token``, an
    opaque id, never the protocol's database id. One per protocol: every version of a study
    open for scoring is in the same queue.
    """

    protocol = models.OneToOneField(Protocol, on_delete=models.CASCADE, related_name="study_queue")
    name = models.CharField(max_length=80)
    token = models.CharField(max_length=32, unique=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.name
