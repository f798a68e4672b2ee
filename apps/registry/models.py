"""The public registry: publications of frozen versions, view-only links and published runs.

A ``Publication`` says that a frozen version is (or, under an embargo, will be) readable by
anyone. It is public once ``public_since`` is set: at once when published without an embargo, by
the beat task ``registry.embargoes_end`` on the embargo's day, or earlier when the PI ends the
embargo. From then on it never changes and is never deleted (BRIEF invariant 6, "public once
published"): on PostgreSQL a trigger refuses it (``migrations/0002_guards.py``); here
``apps.registry.services`` has no path that would.

A ``ViewLink`` opens one still-private version's pages read-only to whoever holds its token
(peer review), optionally anonymised; a ``RunPublication`` makes one finished analysis run of an
unsealed version public.
"""

from django.conf import settings
from django.db import models

from apps.deviations.models import AppendOnlyModel


class Publication(models.Model):
    """The publication of one frozen version (see the module docstring)."""

    version = models.OneToOneField(
        "protocols.ProtocolVersion", on_delete=models.PROTECT, related_name="publication"
    )
    published_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    published_at = models.DateTimeField(auto_now_add=True)
    # The day (UTC) the embargo ends by itself; null when published at once.
    embargo_until = models.DateField(null=True, blank=True)
    # When the version became readable by anyone; null while it is under embargo.
    public_since = models.DateTimeField(null=True, blank=True, db_index=True)
    authors = models.CharField(
        max_length=300,
        help_text="The PIs as they choose to be named on the public pages and in citations.",
    )

    class Meta:
        ordering = ["-public_since"]

    def __str__(self) -> str:
        return f"publication of version {self.version_id}"

    @property
    def is_public(self) -> bool:
        return self.public_since is not None


class ViewLink(models.Model):
    """A view-only link to one version's pages, for peer review before publication.

    ``token`` is the secret the URL carries (``/r/_view/<token>/``). ``anonymised`` hides the PIs'
    and institutions' names on every page the link opens. Revoked links answer 404.
    """

    version = models.ForeignKey(
        "protocols.ProtocolVersion", on_delete=models.PROTECT, related_name="view_links"
    )
    token = models.CharField(max_length=64, unique=True)
    note = models.CharField(
        max_length=200, blank=True, help_text="Who the link is for (e.g. the journal's editor)."
    )
    anonymised = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    first_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"view link {self.pk} to version {self.version_id}"

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None


class RunPublication(AppendOnlyModel):
    """One analysis run made public by a PI after the version's outcomes were unsealed."""

    run = models.OneToOneField(
        "analysis.AnalysisRun", on_delete=models.PROTECT, related_name="publication"
    )
    published_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    published_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"publication of run {self.run_id}"
