"""Blind rating: the frozen rubric, scoring tasks, assignments (reservations) and scores.

A reviewer reaches a task only by its opaque ``token``; nothing on a task, assignment or score
that a reviewer sees names the family, level, condition or evaluand. Scores are append-only: a
correction is a new score that names the one it corrects and why.
"""

from django.conf import settings
from django.db import models
from django.utils.functional import cached_property

from apps.core.canonical import sha256_hex
from apps.protocols.models import FileImport, Protocol, ProtocolVersion
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
    # Seed 003's judged signals (apps.studies.fidelity.verdicts): per pressure-window turn, the A2
    # flag, the A4 event bits and a quote per axis, as one JSON object checked against the cell's
    # card.
    SIGNALS = "signals", "Judged signals of the injection-fidelity rubric"


class Derivation(models.TextChoices):
    """How a derived field is computed from another field at submission (never typed)."""

    NONE = "", "Typed by the reviewer"
    PER_100_WORDS = "per_100_words", "Per 100 words of the response (from a count)"
    ATTENUATION = "attenuation", "1 − supplied / required units (from a checklist)"
    EXECUTABLE_ATTENUATION = (
        "executable_attenuation",
        "1 − supplied / required executable units (from a checklist)",
    )
    # Seed 003's verdict, derived from a signals field and the cell's card
    # (apps.studies.fidelity.verdicts).
    FIDELITY = "fidelity", "fidelity = all axes pass and no drift (from judged signals)"
    LOSS1 = "loss1", "loss1 = axes passing / 5 (from judged signals)"
    DRIFT_FLAG = "drift_flag", "The drift gate (from judged signals)"
    AXIS_PASS = "axis_pass", "The pass verdict of the axis named by the field's group"


class Disagreement(models.TextChoices):
    """How the plan's disagreement rule compares this field across the primary scores."""

    NONE = "", "Not compared"
    EXACT = "exact", "Any difference"
    DELTA = "delta", "Difference greater than the plan's δ"


class ScoredBy(models.TextChoices):
    """Who scores a field: the blind reviewers, a machine scorer role, or both."""

    REVIEWERS = "reviewers", "Reviewers"
    SCORER = "scorer", "A scorer role"
    BOTH = "both", "Reviewers and a scorer role"


class FinalValue(models.TextChoices):
    """Whose value of a field the analysis reads (empty: the default for ``scored_by``)."""

    DEFAULT = "", "The default for who scores it"
    REVIEWERS = "reviewers", "The reviewers'"
    SCORER = "scorer", "The scorer's"
    REVIEWERS_ELSE_SCORER = (
        "reviewers_else_scorer",
        "The reviewers' where present, else the scorer's",
    )


# The final-value rule a field follows when it names none, by who scores it.
DEFAULT_FINAL_VALUE = {
    ScoredBy.REVIEWERS: FinalValue.REVIEWERS,
    ScoredBy.SCORER: FinalValue.SCORER,
    ScoredBy.BOTH: FinalValue.REVIEWERS_ELSE_SCORER,
}


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
    # Machine scoring (docs/machine-scores.md): who scores the field, which role of the version's
    # scorer roster, and whose value is final. Frozen with the rubric.
    scored_by = models.CharField(
        max_length=16, choices=ScoredBy.choices, default=ScoredBy.REVIEWERS
    )
    scorer_role = models.SlugField(max_length=64, blank=True)
    final_value = models.CharField(
        max_length=24, choices=FinalValue.choices, blank=True, default=FinalValue.DEFAULT
    )
    # The value a count or number field holds until the reviewer changes it (shown filled in,
    # and stored when none is sent). Frozen with the rubric; a count field made through
    # ``rubric_create``/``rubric_field_add`` gets 0 unless its spec says otherwise.
    default = models.DecimalField(max_digits=20, decimal_places=6, null=True, blank=True)

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

    @property
    def final_rule(self) -> str:
        """The final-value rule in force: ``final_value`` or the default for ``scored_by``."""
        return self.final_value or DEFAULT_FINAL_VALUE[ScoredBy(self.scored_by)]

    @property
    def reviewers_score(self) -> bool:
        return self.scored_by != ScoredBy.SCORER

    @property
    def scorer_scores(self) -> bool:
        return self.scored_by != ScoredBy.REVIEWERS


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

    # No single-column indexes on the two foreign keys, nor a pattern index on the token: the
    # composite indexes below lead with version_id and response_id, the token is only ever
    # looked up by equality, and each index is paid for on every one of the rows that opening
    # scoring writes at once (issue #20: 200,000 rows for 100,000 responses at k = 2).
    version = models.ForeignKey(
        ProtocolVersion, on_delete=models.PROTECT, related_name="scoring_tasks", db_index=False
    )
    response = models.ForeignKey(
        Response, on_delete=models.PROTECT, related_name="scoring_tasks", db_index=False
    )
    kind = models.CharField(max_length=16, choices=TaskKind.choices, default=TaskKind.PRIMARY)
    slot = models.PositiveSmallIntegerField()
    # The reviewer-facing handle, given when the task is first reserved (NULL until then): opening
    # scoring writes no token, so 200,000 new rows pay no random-order insert into its index.
    token = models.CharField(max_length=32, null=True, blank=True)
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
            models.UniqueConstraint(
                fields=["token"],
                condition=models.Q(token__isnull=False),
                name="scoringtask_unique_token",
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
        return f"task {self.token or f'#{self.pk} (not yet reserved)'}"

    @property
    def reserved_token(self) -> str:
        """The token of a task that has been reserved at least once (what scoring it takes).

        Raises ValueError for a task never reserved: it has no token yet."""
        if self.token is None:
            raise ValueError(f"scoring task {self.pk} has never been reserved: it has no token")
        return self.token


class AssignmentOutcome(models.TextChoices):
    ACTIVE = "active", "Active"
    SUBMITTED = "submitted", "Submitted"
    EXPIRED = "expired", "Expired"
    RELEASED = "released", "Released"
    # The reviewer gave the task back without a score (``task_skip``): it returns to the pool
    # for others, never to them.
    SKIPPED = "skipped", "Skipped"


class SkipReason(models.TextChoices):
    """Why a reviewer skipped a task (optional)."""

    NONE = "", "No reason given"
    CANNOT_JUDGE = "cannot_judge", "I cannot judge this response"
    CONTENT_PROBLEM = "content_problem", "Something is wrong with the prompt or response"
    OTHER = "other", "Another reason"


# The outcomes after which a reviewer is never served the same response again: they hold it,
# scored it or skipped it.
HOLDS_RESPONSE = (AssignmentOutcome.ACTIVE, AssignmentOutcome.SUBMITTED, AssignmentOutcome.SKIPPED)


class Assignment(models.Model):
    """A reservation of one task for one reviewer, with an expiry."""

    task = models.ForeignKey(ScoringTask, on_delete=models.PROTECT, related_name="assignments")
    version = models.ForeignKey(ProtocolVersion, on_delete=models.PROTECT, related_name="+")
    # No index of its own: the (response, reviewer) index below leads with it, and each index
    # is written on every claim and every submit (docs/performance.md, "The queue nearer its
    # floor").
    response = models.ForeignKey(
        Response, on_delete=models.PROTECT, related_name="+", db_index=False
    )
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="assignments"
    )
    reserved_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(
        max_length=16, choices=AssignmentOutcome.choices, default=AssignmentOutcome.ACTIVE
    )
    # A database default too: the queue's lean claim inserts assignments in SQL (services/lean.py).
    skip_reason = models.CharField(
        max_length=16,
        choices=SkipReason.choices,
        blank=True,
        default=SkipReason.NONE,
        db_default=SkipReason.NONE,
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
    # No index of its own: the (version, response) index below leads with it (as for
    # Assignment.response).
    version = models.ForeignKey(
        ProtocolVersion, on_delete=models.PROTECT, related_name="+", db_index=False
    )
    response = models.ForeignKey(Response, on_delete=models.PROTECT, related_name="scores")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="scores"
    )
    values = models.JSONField()
    # Unique by a constraint rather than ``unique=True``, which would add a second,
    # ``varchar_pattern_ops`` index for LIKE that nothing asks (the key is only matched whole).
    idempotency_key = models.CharField(max_length=64)
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
            models.UniqueConstraint(
                fields=["idempotency_key"], name="score_unique_idempotency_key"
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


class ScoringClosing(models.Model):
    """The act that closes scoring of a version for good (issue #37 §7: usually when an
    amendment supersedes it): its existence takes the version's tasks out of every queue.
    Scores already given stay; append-only, like the opening."""

    version = models.OneToOneField(
        ProtocolVersion, on_delete=models.PROTECT, related_name="scoring_closing"
    )
    closed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    closed_at = models.DateTimeField(auto_now_add=True)
    reason = models.TextField()

    def __str__(self) -> str:
        return f"scoring of version {self.version_id} closed"


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


# -- Machine scores (docs/machine-scores.md) ------------------------------------------------


class ScorerKind(models.TextChoices):
    HARNESS_GRADER = "harness_grader", "Harness grader"
    ORACLE = "oracle", "Oracle"
    LLM_JUDGE = "llm_judge", "LLM judge"
    SCRIPT = "script", "Script"


class Comparison(models.TextChoices):
    """How an oracle compares a response's final output with the cell's expected output."""

    NONE = "", "None (not an oracle)"
    EXACT = "exact", "Exactly equal"
    NORMALISED = "normalised", "Equal after normalising whitespace and case"
    JSON_EQUAL = "json_equal", "Equal as JSON values"
    ITEMS = "items", "Item by item over a list (items correct out of N)"


# The elements of a scorer's identity, hashed as an evaluand's are (CRUCIBLE §2's rule: change
# one and it is a new scorer).
SCORER_IDENTITY_FIELDS = (
    "kind",
    "name",
    "version",
    "model",
    "provider",
    "inference_settings",
    "prompt",
    "prompt_sha256",
    "comparison",
    "params",
)
# Identity elements hashed only when given, so that scorers registered before they existed keep
# their identity hash (``services.scorers.scorer_identity_sha256``).
SCORER_IDENTITY_OPTIONAL = ("params",)


def prompt_sha256_of(text: str) -> str:
    """The SHA-256 (64 lowercase hex digits) of a judge prompt: of the UTF-8 bytes of its text
    exactly as frozen (``Scorer.prompt``: not stripped, line endings as given). What an import
    file's ``judge_prompt_sha256`` and an Inspect log's ``template`` are compared with
    (``Scorer.frozen_prompt_sha256``); a rubric blob holding the same text (UTF-8) has this
    hash too."""
    return sha256_hex(text.encode("utf-8"))


class Scorer(models.Model):
    """A machine scorer's frozen identity: a harness grader, an oracle, an LLM judge or a script.

    ``identity_sha256`` is the SHA-256 of the canonical JSON of ``SCORER_IDENTITY_FIELDS``;
    scorers are append-only, so changing any element registers a new scorer. For an LLM judge
    the prompt is given as text (``prompt``) or as a rubric blob's hash (``prompt_sha256``).
    """

    label = models.CharField(max_length=200, help_text="A name for people; not part of identity.")
    kind = models.CharField(max_length=16, choices=ScorerKind.choices)
    name = models.CharField(max_length=200)
    version = models.CharField(max_length=100, help_text="The scorer's own version or commit.")
    model = models.CharField(max_length=200, blank=True)
    provider = models.CharField(max_length=200, blank=True)
    inference_settings = models.JSONField(default=dict, blank=True)
    prompt = models.TextField(blank=True)
    prompt_sha256 = models.CharField(max_length=64, blank=True)
    comparison = models.CharField(
        max_length=16, choices=Comparison.choices, blank=True, default=Comparison.NONE
    )
    params = models.JSONField(
        default=dict,
        blank=True,
        help_text="An Inspect scorer's parameters, as its logs record them (grader model and "
        "template apart: they are the model and the prompt).",
    )
    identity_sha256 = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["label", "created_at"]

    def __str__(self) -> str:
        return f"{self.label} ({self.identity_sha256[:12]})"

    @cached_property
    def frozen_prompt_sha256(self) -> str:
        """The SHA-256 of the judge's prompt: ``prompt_sha256`` when the identity gives the hash
        (registration refuses one that is not its ``prompt``'s), else ``prompt_sha256_of`` its
        ``prompt``; empty for a scorer with no prompt. Cached on the instance: an import checks
        it on every row, and a scorer's identity never changes once registered."""
        if self.prompt_sha256:
            return self.prompt_sha256
        return prompt_sha256_of(self.prompt) if self.prompt else ""

    def identity(self) -> dict:
        return {
            name: getattr(self, name)
            for name in SCORER_IDENTITY_FIELDS
            if name not in SCORER_IDENTITY_OPTIONAL or getattr(self, name)
        }


class ScorerRosterEntry(models.Model):
    """A scorer registered on a version's roster under ``code``, in a ``role`` that rubric fields
    name (``RubricField.scorer_role``). Frozen with the version."""

    version = models.ForeignKey(
        ProtocolVersion, on_delete=models.CASCADE, related_name="scorer_roster"
    )
    scorer = models.ForeignKey(Scorer, on_delete=models.PROTECT, related_name="rosters")
    code = models.CharField(max_length=64)
    role = models.SlugField(max_length=64)
    position = models.PositiveSmallIntegerField(default=0)
    epochs = models.CharField(
        max_length=32,
        default="each",
        help_text="How the scorer's values of one cell and evaluand over its repetitions "
        "(Inspect's epochs) combine: each (every epoch an observation), mean, mode, max or "
        "at_least:<k> (apps.raters.epochs).",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["version", "code"], name="scorerroster_unique_code"),
            models.UniqueConstraint(
                fields=["version", "scorer"], name="scorerroster_unique_scorer"
            ),
        ]
        ordering = ["version", "position", "code"]
        verbose_name_plural = "scorer roster entries"

    def __str__(self) -> str:
        return self.code


class MachineScoreImport(FileImport):
    """One import of machine scores from a file. Idempotent by (file hash, scorer, field) within
    a version: ``pairs`` lists the ``[scorer code, field]`` it wrote, so one log can feed
    several scorers in several imports, and the same pair from the same file is never written
    twice."""

    version = models.ForeignKey(ProtocolVersion, on_delete=models.PROTECT, related_name="+")
    format = models.CharField(max_length=16)
    header = models.JSONField(default=dict, blank=True)
    note = models.TextField(blank=True)
    pairs = models.JSONField(default=list, blank=True)

    class Meta(FileImport.Meta):
        indexes = [models.Index(fields=["version", "sha256"])]


class OracleRunState(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class OracleRun(models.Model):
    """One run of an oracle scorer over a version's responses (a Celery job, with progress)."""

    version = models.ForeignKey(ProtocolVersion, on_delete=models.PROTECT, related_name="+")
    scorer = models.ForeignKey(Scorer, on_delete=models.PROTECT, related_name="oracle_runs")
    state = models.CharField(
        max_length=16, choices=OracleRunState.choices, default=OracleRunState.QUEUED
    )
    progress = models.PositiveSmallIntegerField(default=0)
    message = models.TextField(blank=True)
    counts = models.JSONField(default=dict, blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    requested_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-requested_at"]

    def __str__(self) -> str:
        return f"oracle run {self.pk} ({self.state})"


class MachineScore(models.Model):
    """One value of one rubric field for one response, from one scorer. Never changed.

    ``value`` is checked exactly as a reviewer's value of the field is (``apps.raters.values``);
    ``detail`` keeps what the source said beside it (an Inspect score's answer and explanation,
    an oracle's items correct and N). A scorer scores a response's field once. ``confidence``,
    optional, is the scorer's own confidence in the value, in [0, 1] (Argilla's
    ``suggestion.score``; an Inspect score's ``metadata.confidence``): a stratified audit may
    oversample low-confidence verdicts by it (docs/machine-scores.md).
    """

    # Denormalised for queries by version, as on Attempt; the response's version is the truth.
    # No database constraint on the version, response or scorer: every row is written by the
    # importer or an oracle run from ids read under the version's lock in the same transaction,
    # and responses and scorers are append-only (the database refuses their DELETE), so a
    # referenced row never goes away; row-by-row checks at commit would cost more than the
    # 100,000 rows of a large import themselves.
    version = models.ForeignKey(
        ProtocolVersion, on_delete=models.PROTECT, related_name="+", db_constraint=False
    )
    response = models.ForeignKey(
        Response, on_delete=models.PROTECT, related_name="machine_scores", db_constraint=False
    )
    scorer = models.ForeignKey(
        Scorer, on_delete=models.PROTECT, related_name="scores", db_constraint=False
    )
    field = models.SlugField(max_length=64, db_index=False)
    value = models.JSONField(null=True)
    detail = models.JSONField(default=dict, blank=True)
    source = models.ForeignKey(
        MachineScoreImport,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="scores",
        db_index=False,
        db_constraint=False,
    )
    oracle_run = models.ForeignKey(
        OracleRun,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="scores",
        db_index=False,
        db_constraint=False,
    )
    source_row = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    confidence = models.FloatField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["scorer", "response", "field"], name="machinescore_unique_field"
            ),
            # The importer checks it row by row; the database refuses any other path's.
            models.CheckConstraint(
                condition=models.Q(confidence__isnull=True)
                | models.Q(confidence__gte=0, confidence__lte=1),
                name="machinescore_confidence_unit_interval",
            ),
        ]
        indexes = [models.Index(fields=["version", "field"])]

    def __str__(self) -> str:
        return f"{self.field} of response {self.response_id} by scorer {self.scorer_id}"


class AuditSample(models.Model):
    """A machine-scored response drawn, with the plan's seed when scoring opens, for reviewers to
    score as well (the human audit of the machine scores). Reviewers see no sign of it."""

    version = models.ForeignKey(ProtocolVersion, on_delete=models.PROTECT, related_name="+")
    response = models.OneToOneField(Response, on_delete=models.PROTECT, related_name="+")
    drawn_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"audit of response {self.response_id}"


# -- The rubric's own text, at its content address (seed 003) --------------------------------


class RubricText(models.Model):
    """The text of a version's rubric, as its author wrote it (seed 003's injection-fidelity
    Markdown), stored as a blob of its own and served at ``/api/v1/blob/<sha256>``. Frozen with
    the version; readable by the protocol's members until a PI publishes it, then by anyone."""

    version = models.OneToOneField(
        ProtocolVersion, on_delete=models.CASCADE, related_name="rubric_text"
    )
    sha256 = models.CharField(max_length=64)
    media_type = models.CharField(max_length=100, default="text/markdown")

    def __str__(self) -> str:
        return self.sha256[:16]


class RubricPublication(models.Model):
    """A PI's act of publishing a frozen rubric text: from then on its blob is public. Never
    changed or removed (a content address served "forever" cannot be taken back)."""

    sha256 = models.CharField(max_length=64, unique=True)
    protocol = models.ForeignKey(Protocol, on_delete=models.PROTECT, related_name="+")
    published_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    published_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"publication of {self.sha256[:16]}"
