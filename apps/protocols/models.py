"""Protocols, their versions, the analysis plan's parameters and content-addressed blobs.

A version's lifecycle is draft → frozen, stored in ``state``. "Superseded" and "withdrawn" are
not stored on the frozen row (a frozen row never changes, by any path): a version is superseded
when a frozen version names it in ``supersedes``, and withdrawn when it has a ``Withdrawal``
tombstone. ``ProtocolVersion.status`` and the selectors derive them.
"""

from typing import TYPE_CHECKING

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from simple_history.models import HistoricalRecords

if TYPE_CHECKING:
    from apps.accounts.models import User


class Protocol(models.Model):
    """A study: a code such as ``OPB-01`` and a title; its content lives in its versions."""

    code = models.CharField(
        max_length=32,
        unique=True,
        validators=[
            RegexValidator(
                r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
                "Use letters, digits, '.', '_' and '-', starting with a letter or digit.",
            )
        ],
    )
    title = models.CharField(max_length=300)
    template = models.CharField(
        max_length=32,
        default="opb",
        help_text="The plan template whose parameters each new version starts with.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["code"]

    def __str__(self) -> str:
        return self.code


class VersionState(models.TextChoices):
    DRAFT = "draft", "Draft"
    FROZEN = "frozen", "Frozen"


class VersionStatus(models.TextChoices):
    """The lifecycle shown to people; ``superseded`` and ``withdrawn`` are derived."""

    DRAFT = "draft", "Draft"
    FROZEN = "frozen", "Frozen"
    SUPERSEDED = "superseded", "Superseded"
    WITHDRAWN = "withdrawn", "Withdrawn"


SECTION_FIELDS = ("background", "hypotheses", "design", "exclusions", "stopping_rules", "analysis")


class ProtocolVersion(models.Model):
    """One version of a protocol. Drafts are edited; a frozen version never changes again."""

    protocol = models.ForeignKey(Protocol, on_delete=models.PROTECT, related_name="versions")
    label = models.CharField(
        max_length=16,
        validators=[RegexValidator(r"^\d+(\.\d+)*$", "A version label looks like 1.0 or 1.1.")],
    )
    state = models.CharField(max_length=8, choices=VersionState.choices, default=VersionState.DRAFT)

    background = models.TextField(blank=True)
    hypotheses = models.TextField(blank=True)
    design = models.TextField(blank=True)
    exclusions = models.TextField(blank=True)
    stopping_rules = models.TextField(blank=True)
    analysis = models.TextField(blank=True)
    decision_table = models.JSONField(
        default=list,
        blank=True,
        help_text="The plan's decision table as data: rules mapping estimates to findings.",
    )
    pipeline = models.CharField(
        max_length=32,
        blank=True,
        help_text="The analysis pipeline the plan runs; empty on versions frozen before plans "
        "named one (their template's pipeline).",
    )

    supersedes = models.OneToOneField(
        "self", on_delete=models.PROTECT, null=True, blank=True, related_name="successor"
    )
    amendment_rationale = models.TextField(blank=True)

    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    frozen_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    frozen_at = models.DateTimeField(null=True, blank=True)
    sha256 = models.CharField(max_length=64, blank=True, db_index=True)

    history = HistoricalRecords()
    # Who made the change, set before save(): django-simple-history reads it into the history
    # record (a plain attribute, not a field; declared here for the type checker).
    _history_user: "User"

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["protocol", "label"], name="version_unique_label"),
        ]
        ordering = ["protocol", "created_at"]

    def __str__(self) -> str:
        return f"{self.protocol.code} v{self.label}"

    @property
    def is_draft(self) -> bool:
        return self.state == VersionState.DRAFT

    @property
    def is_set_aside(self) -> bool:
        """A draft that was never frozen and that a newer version has replaced: kept, closed."""
        return self.is_draft and getattr(self, "successor", None) is not None

    @property
    def is_editable(self) -> bool:
        """A draft that may still change: not set aside, not deposited from elsewhere."""
        return self.is_draft and not self.is_set_aside and not self.is_deposited

    @property
    def is_deposited(self) -> bool:
        """Frozen elsewhere and recorded here as history (``Deposit``): never frozen here."""
        return hasattr(self, "deposit")

    @property
    def status_label(self) -> str:
        return VersionStatus(self.status).label

    @property
    def status(self) -> str:
        """draft, frozen, superseded or withdrawn (see the module docstring).

        A draft set aside for a newer version (``version_amend`` on a draft) reads as superseded
        at once; a frozen version only once its successor is frozen too.
        """
        if self.is_draft:
            return VersionStatus.SUPERSEDED if self.is_set_aside else VersionStatus.DRAFT
        if hasattr(self, "withdrawal"):
            return VersionStatus.WITHDRAWN
        successor = getattr(self, "successor", None)
        if successor is not None and successor.state == VersionState.FROZEN:
            return VersionStatus.SUPERSEDED
        return VersionStatus.FROZEN


class ParameterKind(models.TextChoices):
    NUMBER = "number", "Number"
    INTEGER = "integer", "Integer"
    CHOICE = "choice", "Choice"
    INTERVAL_METHOD = "interval_method", "Interval method"
    TEXT = "text", "Text"
    BOOLEAN = "boolean", "Yes or no"
    LIST = "list", "List"
    JSON = "json", "Structured (JSON)"


class AnalysisParameter(models.Model):
    """One typed parameter of a version's analysis plan (OPB-01 §7's brackets, for example).

    ``value`` is stored as text exactly as the PI wrote it and validated by ``kind``; empty means
    not yet instantiated, which blocks the freeze when ``required``. A list's value is a JSON
    array of texts; a json parameter's value is JSON validated by its ``schema`` (JSON Schema).
    """

    version = models.ForeignKey(
        ProtocolVersion, on_delete=models.CASCADE, related_name="parameters"
    )
    name = models.SlugField(max_length=64)
    label = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, choices=ParameterKind.choices)
    value = models.TextField(blank=True)
    unit = models.CharField(max_length=40, blank=True)
    required = models.BooleanField(default=True)
    choices = models.JSONField(default=list, blank=True)
    minimum = models.DecimalField(max_digits=20, decimal_places=10, null=True, blank=True)
    maximum = models.DecimalField(max_digits=20, decimal_places=10, null=True, blank=True)
    help_text = models.CharField(max_length=500, blank=True)
    position = models.PositiveIntegerField(default=0)
    schema = models.JSONField(
        null=True, blank=True, help_text="The JSON Schema a json parameter's value must satisfy."
    )

    history = HistoricalRecords()
    # Who made the change, set before save(): django-simple-history reads it into the history
    # record (a plain attribute, not a field; declared here for the type checker).
    _history_user: "User"

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["version", "name"], name="parameter_unique_name"),
        ]
        ordering = ["version", "position", "name"]

    def __str__(self) -> str:
        return f"{self.name} = {self.value or '⟨ ⟩'}"


class Withdrawal(models.Model):
    """The tombstone of a withdrawn frozen version: who withdrew it, when and why."""

    version = models.OneToOneField(
        ProtocolVersion, on_delete=models.PROTECT, related_name="withdrawal"
    )
    reason = models.TextField()
    withdrawn_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    withdrawn_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"withdrawal of version {self.version_id}"


class Blob(models.Model):
    """A content-addressed frozen document, kept forever and served by its SHA-256."""

    sha256 = models.CharField(max_length=64, primary_key=True)
    content = models.BinaryField()
    media_type = models.CharField(max_length=100, default="application/json")
    size = models.PositiveBigIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.sha256[:16]


class Deposit(models.Model):
    """A version frozen elsewhere, recorded here as history (issue #17; OPB-01 v1.0, which "is
    retained unaltered under non-destruction").

    The text is kept exactly as it was published, as a content-addressed blob (its SHA-256 is
    the blob's), with where and when it was frozen. A deposited version never passes this
    registry's freeze gate and never runs an analysis: it is a record, not a plan. Rows are
    append-only (a database trigger refuses UPDATE and DELETE on PostgreSQL).
    """

    version = models.OneToOneField(
        ProtocolVersion, on_delete=models.PROTECT, related_name="deposit"
    )
    blob = models.ForeignKey(Blob, on_delete=models.PROTECT, related_name="+")
    frozen_where = models.CharField(
        max_length=500, help_text="Where the version was frozen (an archive, a URL, a DOI)."
    )
    frozen_on = models.DateField(
        null=True, blank=True, help_text="The day it was frozen there, when the record gives it."
    )
    note = models.TextField(blank=True)
    recorded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, related_name="+"
    )
    recorded_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.version} (deposited, {self.blob_id})"


class FileImport(models.Model):
    """One file imported into a version, as every import stores it (``import_frame``): keyed
    within its version by the SHA-256 of its bytes, with the file's name, the mapping it was read
    with, what it wrote (``counts``), who imported it and when. Each import's own record
    (``ResponseImport``, ``MachineScoreImport``) adds its ``version`` (with its own reverse name),
    its ``format``, the file's ``header``, the importer's ``note`` and whatever else it keeps."""

    sha256 = models.CharField(max_length=64)
    filename = models.CharField(max_length=255)
    mapping = models.JSONField(default=dict, blank=True)
    counts = models.JSONField(default=dict)
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    imported_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        abstract = True
        ordering = ["-imported_at"]

    def __str__(self) -> str:
        return f"{self.filename} ({self.sha256[:12]})"
