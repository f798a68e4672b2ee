"""The append-only, hash-chained deviation log and the outcome seal.

Each protocol has one chain of entries. An entry's ``hash`` is the SHA-256 of the canonical JSON
of its fields together with ``prev_hash``, the hash of the entry before it (64 zeros for the
first). On PostgreSQL, triggers refuse UPDATE, DELETE and TRUNCATE of entries and unsealings.
"""

from django.conf import settings
from django.db import models

GENESIS_HASH = "0" * 64


class EntryKind(models.TextChoices):
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


class LogEntry(models.Model):
    protocol = models.ForeignKey(
        "protocols.Protocol", on_delete=models.PROTECT, related_name="log_entries"
    )
    seq = models.PositiveIntegerField()
    recorded_at = models.DateTimeField()
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, related_name="+"
    )
    # The actor's username when the entry was written: part of the hashed content, so renaming
    # a user later does not break the chain.
    actor_name = models.CharField(max_length=150)
    kind = models.CharField(max_length=32, choices=EntryKind.choices)
    rationale = models.TextField()
    refs = models.JSONField(default=list)
    outcome_visible = models.BooleanField()
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64, unique=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["protocol", "seq"], name="logentry_unique_seq"),
        ]
        ordering = ["protocol", "seq"]
        verbose_name_plural = "log entries"

    def __str__(self) -> str:
        return f"{self.protocol_id}#{self.seq} {self.kind}"


class OutcomeUnsealing(models.Model):
    """The act that breaks a version's outcome seal. Its existence is the seal's state."""

    version = models.OneToOneField(
        "protocols.ProtocolVersion", on_delete=models.PROTECT, related_name="unsealing"
    )
    unsealed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    unsealed_at = models.DateTimeField(auto_now_add=True)
    confirmation = models.CharField(max_length=200)

    def __str__(self) -> str:
        return f"outcomes of version {self.version_id} unsealed"
