"""What comes back from model surfaces: evaluands, administrations, attempts and responses.

Evaluands are identity-hashed and never change (CRUCIBLE §2). The roster and the administration
schedule belong to a version and freeze with it. Attempts, responses, imports and exclusions
arrive after the freeze and are append-only: a rerun is a new attempt, a correction a new record.
"""

from collections.abc import Iterable, Mapping
from typing import Any

from django.conf import settings
from django.db import models

from apps.core.canonical import canonical_json, sha256_hex
from apps.items.models import Cell
from apps.protocols.models import FileImport, ProtocolVersion

# The elements of an evaluand's identity, in the order of CRUCIBLE §2's tuple.
IDENTITY_FIELDS = (
    "model",
    "provider",
    "safeguards",
    "inference_settings",
    "harness_version",
    "system_prompt",
    "observation_projection",
    "toolkit",
    "memory_policy",
    "budgets",
    "retry_policy",
)


def identity_sha256_of(identity: dict[str, Any]) -> str:
    """The SHA-256 of the canonical JSON of an identity tuple (every key of ``IDENTITY_FIELDS``)."""
    return sha256_hex(canonical_json({name: identity[name] for name in IDENTITY_FIELDS}))


class Evaluand(models.Model):
    """A declared system under test: the complete frozen tuple of CRUCIBLE §2.

    ``identity_sha256`` is the SHA-256 of the canonical JSON of ``IDENTITY_FIELDS``; changing any
    element yields a different hash and therefore a new evaluand, and the old one stays.
    """

    label = models.CharField(max_length=200, help_text="A name for people; not part of identity.")
    model = models.CharField(max_length=200, help_text="Model identifier and snapshot.")
    provider = models.CharField(max_length=200, blank=True)
    safeguards = models.JSONField(default=dict, blank=True)
    inference_settings = models.JSONField(default=dict, blank=True)
    harness_version = models.CharField(max_length=200, blank=True)
    system_prompt = models.TextField(blank=True)
    observation_projection = models.TextField(blank=True)
    toolkit = models.JSONField(default=list, blank=True)
    memory_policy = models.CharField(max_length=200, blank=True)
    budgets = models.JSONField(default=dict, blank=True)
    retry_policy = models.CharField(max_length=200, blank=True)
    identity_sha256 = models.CharField(max_length=64, unique=True)
    derived_from = models.ForeignKey(
        "self", on_delete=models.PROTECT, null=True, blank=True, related_name="derivatives"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["label", "created_at"]

    def __str__(self) -> str:
        return f"{self.label} ({self.identity_sha256[:12]})"

    def identity(self) -> dict[str, Any]:
        """The identity tuple as a dict, in ``IDENTITY_FIELDS`` order."""
        return {name: getattr(self, name) for name in IDENTITY_FIELDS}


class RosterEntry(models.Model):
    """An evaluand enrolled in a version; ``code`` is how the schedule and reports name it."""

    version = models.ForeignKey(ProtocolVersion, on_delete=models.CASCADE, related_name="roster")
    evaluand = models.ForeignKey(Evaluand, on_delete=models.PROTECT, related_name="rosters")
    code = models.CharField(max_length=64)
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["version", "evaluand"], name="roster_unique_evaluand"),
            models.UniqueConstraint(fields=["version", "code"], name="roster_unique_code"),
        ]
        ordering = ["version", "position", "code"]
        verbose_name_plural = "roster entries"

    def __str__(self) -> str:
        return self.code


class Administration(models.Model):
    """One cell given to one evaluand at one repetition: an entry of the frozen schedule.

    Generated at freeze from the plan's seed, in ``position`` order; ``assignment`` holds the
    levels of randomised and counterbalanced factors for this administration.
    """

    version = models.ForeignKey(
        ProtocolVersion, on_delete=models.CASCADE, related_name="administrations"
    )
    position = models.PositiveIntegerField()
    cell = models.ForeignKey(Cell, on_delete=models.PROTECT, related_name="administrations")
    evaluand = models.ForeignKey(Evaluand, on_delete=models.PROTECT, related_name="administrations")
    repetition = models.PositiveSmallIntegerField()
    block = models.PositiveIntegerField(default=0)
    assignment = models.JSONField(default=dict, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["version", "position"], name="administration_unique_position"
            ),
            models.UniqueConstraint(
                fields=["version", "cell", "evaluand", "repetition"],
                name="administration_unique_cell_evaluand_repetition",
            ),
        ]
        ordering = ["version", "position"]

    def __str__(self) -> str:
        return f"administration {self.position}"


class ImportFormat(models.TextChoices):
    CSV = "csv", "CSV"
    JSONL = "jsonl", "JSON Lines"
    INSPECT = "inspect", "Inspect AI log"


class ResponseImport(FileImport):
    """One imported file of responses: who imported what, when, with what counts. Idempotent by
    file hash."""

    version = models.ForeignKey(ProtocolVersion, on_delete=models.PROTECT, related_name="imports")
    format = models.CharField(max_length=16, choices=ImportFormat.choices)
    header = models.JSONField(
        default=dict,
        blank=True,
        help_text="What the file says about itself (an Inspect log's eval header), as received.",
    )
    note = models.TextField(blank=True, help_text="Why this file was imported (reruns, say).")

    class Meta(FileImport.Meta):
        constraints = [
            models.UniqueConstraint(fields=["version", "sha256"], name="import_unique_file"),
        ]


class TerminalOutcome(models.TextChoices):
    COMPLETED = "completed", "Completed"
    REFUSED = "refused", "Refused"
    ERROR = "error", "Error"
    TIMEOUT = "timeout", "Timeout"
    BUDGET_EXHAUSTED = "budget_exhausted", "Budget exhausted"
    PLATFORM_LOSS = "platform_loss", "Platform loss"
    # CRUCIBLE §4, §8, §10: the harness's further terminal semantics. A safety stop (a range
    # boundary crossed, a boundary-observation fault, a hazardous external action, unreconciled
    # telemetry loss) overrides completion: the harness reports it instead of "completed".
    RATE_LIMITED = "rate_limited", "Rate-limited"
    MALFORMED_OUTPUT = "malformed_output", "Malformed output"
    PARSE_FAILURE = "parse_failure", "Parse failure"
    SAFETY_STOP = "safety_stop", "Safety stop"


class Attempt(models.Model):
    """One try at an administration. A rerun is a new attempt; nothing is overwritten.

    Platform losses (infrastructure failures that never reached the model) are counted apart
    from model outcomes (CRUCIBLE §4). The analysis reads the first attempt of an administration
    that crossed the execution-evidence gate (``evidence_gate``), with its declared outcome: a
    later rerun never replaces it (CRUCIBLE §10).
    """

    # The version is the administration's (denormalised for queries by version). Its database
    # constraint would check, row by row at commit, what the administration's already guarantees;
    # on a 100,000-row import those checks cost more than the rows themselves.
    version = models.ForeignKey(
        ProtocolVersion, on_delete=models.PROTECT, related_name="attempts", db_constraint=False
    )
    # No index of its own: the unique (administration, number) index serves every lookup by
    # administration, and one index fewer makes a 100,000-row import faster.
    administration = models.ForeignKey(
        Administration, on_delete=models.PROTECT, related_name="attempts", db_index=False
    )
    number = models.PositiveSmallIntegerField()
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    terminal_outcome = models.CharField(max_length=32, choices=TerminalOutcome.choices)
    # CRUCIBLE §4, §10: whether the attempt crossed the positive execution-evidence gate. An
    # attempt that never crossed it is a platform loss (not a model episode) and a rerun may
    # replace it; one that crossed it keeps its declared outcome and is the one analysed.
    # Null on attempts recorded before the flag existed: read as "crossed unless a platform
    # loss" (``crossed_evidence_gate``); the table is append-only, so no backfill.
    evidence_gate = models.BooleanField(
        null=True,
        blank=True,
        help_text="Crossed the execution-evidence gate (false only for platform losses).",
    )
    raw = models.JSONField(default=dict, help_text="The record exactly as received.")
    source = models.ForeignKey(
        ResponseImport,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="attempts",
        # Import records are append-only and made in the same transaction as their attempts;
        # neither an index nor a row-by-row constraint check earns its cost on a large import.
        db_index=False,
        db_constraint=False,
    )
    source_row = models.PositiveIntegerField(
        null=True, blank=True, help_text="The record number in the source file (1-based)."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["administration", "number"], name="attempt_unique_number"
            ),
        ]
        ordering = ["administration", "number"]

    def __str__(self) -> str:
        return f"attempt {self.number} of administration {self.administration_id}"

    @property
    def crossed_evidence_gate(self) -> bool:
        return crossed_evidence_gate(self.evidence_gate, self.terminal_outcome)


def crossed_evidence_gate(flag: bool | None, terminal_outcome: str) -> bool:
    """Whether an attempt crossed the execution-evidence gate (CRUCIBLE §4, §10): its recorded
    flag, or, where none was recorded, every outcome but a platform loss."""
    if flag is not None:
        return bool(flag)
    return terminal_outcome != TerminalOutcome.PLATFORM_LOSS


def analysed_attempt(attempts: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The attempt of one administration that the analysis reads (CRUCIBLE §4, §10): the first,
    in attempt-number order, that crossed the execution-evidence gate, with its declared outcome
    (a later rerun never replaces it); None when none crossed it (platform losses only).
    ``attempts`` are in number order, each with ``evidence_gate`` and ``terminal_outcome``."""
    return next(
        (a for a in attempts if crossed_evidence_gate(a["evidence_gate"], a["terminal_outcome"])),
        None,
    )


class Response(models.Model):
    """The text an attempt produced: what reviewers score."""

    # The attempt's version, denormalised; see Attempt.version for why it has no constraint.
    version = models.ForeignKey(
        ProtocolVersion, on_delete=models.PROTECT, related_name="responses", db_constraint=False
    )
    attempt = models.OneToOneField(Attempt, on_delete=models.PROTECT, related_name="response")
    text = models.TextField()
    word_count = models.PositiveIntegerField()

    def __str__(self) -> str:
        return f"response to attempt {self.attempt_id}"


# Reasons every plan may use: evidence-integrity failures that make an attempt ineligible whatever
# its content (CRUCIBLE §7, §10). A plan adds its own frozen reasons in its ``exclusion_reasons``
# parameter. There is deliberately no code for "anomalous" or "unfavourable" behaviour.
EVIDENCE_INTEGRITY_REASONS = {
    "containment_breach": "A containment breach occurred during the attempt.",
    "observation_fault": "The observation path failed: the record does not show what happened.",
    "telemetry_loss": "Telemetry was lost and could not be reconciled.",
    "control_validation_failed": "The execution environment failed the frozen control validation.",
    "input_mismatch": "The input administered differs from the frozen cell.",
    "evaluand_mismatch": "The attempt ran on a system other than the enrolled evaluand.",
    "record_corrupt": "The received record is truncated or corrupt.",
}


class Exclusion(models.Model):
    """An attempt excluded from analysis, with a reason code, the decision time, the person, and
    whether outcome data were visible then (from the outcome seal, never typed; CRUCIBLE §10).

    Excluded attempts stay visible and are counted in every report.
    """

    version = models.ForeignKey(
        ProtocolVersion, on_delete=models.PROTECT, related_name="exclusion_records"
    )
    attempt = models.ForeignKey(Attempt, on_delete=models.PROTECT, related_name="exclusions")
    reason_code = models.CharField(max_length=64)
    rationale = models.TextField()
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    decided_at = models.DateTimeField(auto_now_add=True)
    outcome_visible = models.BooleanField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["attempt"], name="exclusion_one_per_attempt"),
        ]
        ordering = ["-decided_at"]

    def __str__(self) -> str:
        return f"exclusion of attempt {self.attempt_id} ({self.reason_code})"


class ControlResult(models.TextChoices):
    PASS = "pass", "Pass"
    FAIL = "fail", "Fail"
    INCONCLUSIVE = "inconclusive", "Inconclusive"


class ControlValidation(models.Model):
    """The control validation of one execution environment (CRUCIBLE §7): pass, fail or
    inconclusive, never changed (a new record supersedes it). An episode enters model
    comparison only when its environment's latest validation is a pass; an inconclusive control
    is never a pass. An episode names its environment in the import's ``environment`` column."""

    version = models.ForeignKey(
        ProtocolVersion, on_delete=models.PROTECT, related_name="control_validations"
    )
    environment = models.CharField(max_length=200)
    result = models.CharField(max_length=16, choices=ControlResult.choices)
    rationale = models.TextField()
    recorded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    recorded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["version", "environment", "recorded_at", "pk"]

    def __str__(self) -> str:
        return f"control validation of {self.environment}: {self.result}"


class FreshSession(models.TextChoices):
    YES = "yes", "Yes"
    NO = "no", "No"
    UNKNOWN = "unknown", "Unknown"


class SessionGuarantee(models.Model):
    """OPB-01 §6.3: whether a surface (evaluand) can guarantee a fresh session — persistent
    memory or search history leave order effects uncontrolled. "A property of the field site,
    recorded rather than corrected": recorded once per evaluand, append-only like the evaluand,
    and shown beside that surface's results. Not part of the identity hash (an evaluand's
    memory policy is); an evaluand with no record reads as unknown."""

    evaluand = models.OneToOneField(
        Evaluand, on_delete=models.PROTECT, related_name="session_guarantee"
    )
    fresh_session = models.CharField(max_length=8, choices=FreshSession.choices)
    note = models.TextField(blank=True)
    recorded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, related_name="+"
    )
    recorded_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.evaluand}: fresh session {self.fresh_session}"


class SessionColumns(models.Model):
    """A live-model session's typed columns (seed 002, "Record"), stored once beside its attempt.

    Written by the importer in the attempt's own transaction (and batch) from the attempt's
    verbatim ``raw`` by the one extractor, ``apps.responses.sessions.session_record``; the
    analysis reads these columns rather than the archive. Append-only like the attempt (a
    corrected record is a new attempt). Only versions whose plan reads sessions (a registered
    import check that asks for them, e.g. ``paired_blocks``) get rows; attempts imported before
    the table existed get theirs from ``manage.py backfill_session_columns``.

    The self report is stored here apart from the action-log columns and is never an endpoint.
    """

    attempt = models.OneToOneField(
        Attempt, on_delete=models.PROTECT, primary_key=True, related_name="session_columns"
    )
    tokens = models.BigIntegerField(null=True, blank=True, help_text="Tokens used (all models).")
    operations = models.PositiveIntegerField(null=True, blank=True)
    cost = models.FloatField(null=True, blank=True, help_text="Cost in US dollars.")
    tool_calls = models.JSONField(
        default=list, blank=True, help_text="The function of every tool call made, in order."
    )
    interruptions = models.PositiveIntegerField(
        null=True, blank=True, help_text="Interruptions the harness actually served."
    )
    aborted = models.BooleanField(default=False)
    claimed_complete = models.BooleanField(
        null=True, blank=True, help_text="The session's claim that it is done (apparent success)."
    )
    unsupported_blockers = models.PositiveIntegerField(
        null=True, blank=True, help_text="Blockers the session cited that were never imposed."
    )
    infrastructure_failure = models.CharField(
        max_length=16,
        blank=True,
        help_text="The infrastructure-failure stratum (transport, budget, provider), if any.",
    )
    self_report = models.TextField(
        null=True, blank=True, help_text="The model's own account; never an endpoint."
    )

    class Meta:
        verbose_name_plural = "session columns"

    def __str__(self) -> str:
        return f"session columns of attempt {self.attempt_id}"
