"""The append-only, hash-chained deviation log and the outcome seal.

Each protocol has one chain of entries. An entry's ``hash`` is the SHA-256 of the canonical JSON
of its fields together with ``prev_hash``, the hash of the entry before it (64 zeros for the
first); ``apps/deviations/chain.py`` computes and verifies it and ``docs/deviation-log.md`` gives
the exact payload. On PostgreSQL, triggers refuse UPDATE, DELETE and TRUNCATE of entries and
unsealings; here, the model and its queryset refuse them too, so no application path exists.
"""

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models.functions import Now

from apps.deviations.chain import GENESIS_HASH

__all__ = [
    "GENESIS_HASH",
    "EntryKind",
    "LogEntry",
    "LogTreeNode",
    "OutcomeUnsealing",
    "PendingEntry",
]


class EntryKind(models.TextChoices):
    """Every kind of entry the log knows. An app that needs a new kind adds it here.

    The model field deliberately carries no ``choices``: adding a kind then needs no migration.
    ``deviation_append`` refuses a kind that is not listed.
    """

    FREEZE = "freeze", "Freeze"
    AMENDMENT = "amendment", "Amendment"
    WITHDRAWAL = "withdrawal", "Withdrawal"
    EXCLUSION = "exclusion", "Exclusion"
    RERUN = "rerun", "Rerun"
    REORDER = "reorder", "Reorder"
    OUTCOME_UNSEALED = "outcome_unsealed", "Outcome unsealed"
    DEVIATION = "deviation", "Deviation"
    PLATFORM_LOSS = "platform_loss", "Platform loss"
    IMPORT = "import", "Import"
    SCORE_CORRECTION = "score_correction", "Score correction"
    ANALYSIS = "analysis", "Analysis run"
    # Written by the system when a frozen version's rows no longer give its hash.
    INTEGRITY_ALARM = "integrity_alarm", "Integrity alarm"
    MEMBERSHIP = "membership", "Role granted or removed"
    # CRUCIBLE §7: an execution environment's control validation (pass, fail, inconclusive).
    CONTROL_VALIDATION = "control_validation", "Control validation"
    # Seed 003: a PI makes a frozen rubric's text public at its content address.
    PUBLICATION = "publication", "Rubric published"
    # The public registry (apps/registry): a version published (at once or under embargo), an
    # embargo ended, an analysis run published; a view-only link created, revoked or first used.
    REGISTRY = "registry", "Public registry"
    VIEW_LINK = "view_link", "View-only link"


# The kinds a PI or editor may record by hand (CRUCIBLE §8: a reorder is recorded as a deviation;
# platform losses are reported apart). The others are written by the services that do the act.
MANUAL_KINDS = (EntryKind.DEVIATION, EntryKind.REORDER, EntryKind.PLATFORM_LOSS)


class AppendOnlyError(Exception):
    """Raised when code tries to change or delete a row that may only be appended."""


class NoUpdateQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise AppendOnlyError(f"{self.model.__name__} rows are append-only: no update")

    # Django's flag on a queryset method (never copied to the manager); the stubs know no
    # attributes on functions.
    update.queryset_only = True  # type: ignore[attr-defined]


class AppendOnlyQuerySet(NoUpdateQuerySet):
    def delete(self):
        raise AppendOnlyError(f"{self.model.__name__} rows are append-only: no delete")

    delete.queryset_only = True  # type: ignore[attr-defined]


class NoUpdateModel(models.Model):
    """Rows that are inserted once and never changed by the application (they may be deleted:
    ``PendingEntry``). A subclass's manager is ``NoUpdateQuerySet``'s or a subclass's."""

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AppendOnlyError(f"{type(self).__name__} rows are append-only: no update")
        super().save(*args, **kwargs)


class AppendOnlyModel(NoUpdateModel):
    """Rows that are inserted once and never changed or deleted by the application."""

    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        abstract = True

    def delete(self, *args, **kwargs):
        raise AppendOnlyError(f"{type(self).__name__} rows are append-only: no delete")


class LogEntry(AppendOnlyModel):
    """One entry of a protocol's deviation log. Written only by ``deviation_append``."""

    protocol = models.ForeignKey(
        "protocols.Protocol", on_delete=models.PROTECT, related_name="log_entries"
    )
    # The protocol's code when the entry was written: the hashed ``protocol`` field. The chain
    # never reads the live Protocol row, so a rename (refused once the protocol has a frozen
    # version or an entry, but possible to whoever could switch that guard off) breaks nothing.
    protocol_code = models.CharField(max_length=32)
    seq = models.PositiveIntegerField()
    # The database's clock (clock_timestamp()) at the append, not the caller's.
    recorded_at = models.DateTimeField()
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, related_name="+"
    )
    # The actor's username when the entry was written: part of the hashed content, so renaming
    # a user later does not break the chain. "system" when no person acted.
    actor_name = models.CharField(max_length=150)
    kind = models.CharField(max_length=32)
    rationale = models.TextField()
    refs = models.JSONField(default=list, blank=True)
    # The day a recorded deviation happened (CRUCIBLE's deviation-log date); null for entries the
    # system writes at the moment of the act, whose day is ``recorded_at``.
    occurred_on = models.DateField(null=True, blank=True)
    # Whether outcome data had been seen: set by deviation_append from the outcome seal, never
    # passed by a caller.
    outcome_visible = models.BooleanField()
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64, unique=True)
    # The PendingEntry this entry chained, when it was staged: a staged row may leave the queue
    # only in a transaction that chains its content under its id (a deferred constraint trigger,
    # deviations 0009), so the runtime role cannot drop an entry before it is chained. Not hashed:
    # a queue's bookkeeping, not part of what the entry says.
    pending_id = models.BigIntegerField(null=True, blank=True, editable=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["protocol", "seq"], name="logentry_unique_seq"),
            models.UniqueConstraint(
                fields=["pending_id"],
                condition=models.Q(pending_id__isnull=False),
                name="logentry_unique_pending",
            ),
        ]
        ordering = ["protocol", "seq"]
        verbose_name_plural = "log entries"

    def __str__(self) -> str:
        return f"{self.protocol_id}#{self.seq} {self.kind}"

    @property
    def kind_label(self) -> str:
        return EntryKind(self.kind).label if self.kind in EntryKind.values else self.kind


class PendingEntry(NoUpdateModel):
    """A log entry staged by ``deviation_append`` while another transaction held the protocol's
    log lock, waiting for its place in the chain (``services._combine`` after its
    writer commits; ``services.pending_sequence`` for leftovers).

    It holds the validated fields of a ``NewEntry``; the chain's own fields (seq, hashes, the
    time, ``outcome_visible``, the protocol's code) are given when it is chained, and the row is
    deleted in the transaction that chains it. Inserted in the caller's transaction, so it
    exists only if the change it records committed. ``id`` is the queue's order. On
    PostgreSQL a trigger refuses UPDATE (the runtime role holds no UPDATE either); INSERT,
    SELECT and DELETE stay allowed, and a deferred constraint trigger refuses, at commit, the
    delete of a row whose content the same transaction has not chained under its id
    (``LogEntry.pending_id``). Nothing reads these rows as log entries: the verifier,
    pages, exports and checkpoints read ``LogEntry`` only (docs/deviation-log.md, "Appends
    under contention").
    """

    protocol = models.ForeignKey("protocols.Protocol", on_delete=models.PROTECT, related_name="+")
    kind = models.CharField(max_length=32)
    rationale = models.TextField()
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, related_name="+"
    )
    # The actor's username when the entry was staged (what the chained entry hashes).
    actor_name = models.CharField(max_length=150)
    refs = models.JSONField(default=list, blank=True)
    occurred_on = models.DateField(null=True, blank=True)
    created_at = models.DateTimeField(db_default=Now())

    objects = NoUpdateQuerySet.as_manager()

    class Meta:
        ordering = ["protocol", "id"]
        verbose_name_plural = "pending entries"
        # The sequencer's read: one protocol's rows in queue order.
        indexes = [models.Index(fields=["protocol", "id"], name="pendingentry_queue")]

    def __str__(self) -> str:
        return f"{self.protocol_id} pending {self.pk} {self.kind}"


class OutcomeUnsealing(AppendOnlyModel):
    """The act that breaks a version's outcome seal. Its existence is the seal's state."""

    version = models.OneToOneField(
        "protocols.ProtocolVersion", on_delete=models.PROTECT, related_name="unsealing"
    )
    unsealed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    unsealed_at = models.DateTimeField(auto_now_add=True)
    # What the PI typed to confirm (the protocol's code), kept as evidence of the explicit act.
    confirmation = models.CharField(max_length=200)

    def __str__(self) -> str:
        return f"outcomes of version {self.version_id} unsealed"


class LogCheckpoint(AppendOnlyModel):
    """A signed checkpoint of a protocol's log head (``apps/deviations/checkpoints.py``).

    Kept here so auditors can list and download them; what makes them worth having is that
    copies leave the database (witness, downloads, exports), signed with a key the database
    never holds. ``document`` is the whole signed checkpoint as served.
    """

    protocol = models.ForeignKey(
        "protocols.Protocol", on_delete=models.PROTECT, related_name="log_checkpoints"
    )
    seq = models.PositiveIntegerField()
    head_hash = models.CharField(max_length=64)
    key_id = models.CharField(max_length=16)
    signed_at = models.DateTimeField()
    document = models.JSONField()

    class Meta:
        ordering = ["protocol", "seq", "signed_at"]
        indexes = [models.Index(fields=["protocol", "-seq"], name="checkpoint_latest")]

    def __str__(self) -> str:
        return f"{self.protocol_id} checkpoint at #{self.seq}"


class LogTreeNode(AppendOnlyModel):
    """A stored root of a perfect subtree of a protocol's Merkle tree (``apps/deviations/tree.py``).

    Subtree ``index`` at ``level`` covers entries ``index * 2**level + 1`` to
    ``(index + 1) * 2**level``; only levels from ``tree.STORED_LEVEL`` up are kept (below, the
    entries' hashes are read instead). A cache that serves proofs in O(log n) reads: nothing
    trusts it, every use is checked against a signed root or recomputed from the entries.
    """

    protocol = models.ForeignKey("protocols.Protocol", on_delete=models.PROTECT, related_name="+")
    level = models.PositiveSmallIntegerField()
    index = models.PositiveBigIntegerField()
    hash = models.CharField(max_length=64)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["protocol", "level", "index"], name="logtreenode_unique_position"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.protocol_id} tree node {self.level}/{self.index}"
