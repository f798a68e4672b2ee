"""Writes of the public registry: publish, embargo, view-only links, published runs.

Each service checks the state of what it changes (never who asks: ``apps.registry.access`` does
that), calls ``full_clean`` and writes its deviation-log entry in the same transaction. Bad input
raises ``ValidationError`` naming the field, before anything is written.
"""

from __future__ import annotations

import secrets
from datetime import UTC, date

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from apps.accounts.models import User
from apps.analysis.models import AnalysisRun, RunState
from apps.analysis.refs import run_ref
from apps.core.rows import full_clean_save
from apps.deviations.models import EntryKind
from apps.deviations.selectors import outcomes_visible
from apps.deviations.services import version_log_append
from apps.protocols.models import ProtocolVersion, VersionState
from apps.registry.models import Publication, RunPublication, ViewLink

# OSF Registries' longest embargo (https://help.osf.io/article/138-embargo-a-registration).
MAX_EMBARGO_YEARS = 4


def today_utc() -> date:
    """Today's date in UTC: the day embargoes are counted in."""
    return timezone.now().astimezone(UTC).date()


def embargo_limit(today: date) -> date:
    """The latest embargo day allowed when publishing on ``today``: four years on (28 February
    for a 29 February)."""
    try:
        return today.replace(year=today.year + MAX_EMBARGO_YEARS)
    except ValueError:
        return today.replace(year=today.year + MAX_EMBARGO_YEARS, day=28)


def _check_publishable(version: ProtocolVersion) -> None:
    name = f"{version.protocol.code} v{version.label}"
    if version.state != VersionState.FROZEN:
        raise ValidationError(
            {"version": f"{name} is a draft; only a frozen version can be published."}
        )
    if hasattr(version, "withdrawal"):
        raise ValidationError({"version": f"{name} was withdrawn; it cannot be published."})


def _default_authors(user: User) -> str:
    return user.get_full_name().strip() or user.get_username()


@transaction.atomic
def version_publish(
    *,
    version: ProtocolVersion,
    user: User,
    embargo_until: date | None = None,
    authors: str = "",
) -> Publication:
    """Publish the frozen ``version``: public at once, or under an embargo that ends by itself on
    ``embargo_until`` (a day after today and at most four years ahead, UTC).

    ``authors`` is how the PIs choose to be named (default: ``user``'s full name). Writes a
    ``registry`` log entry with who, when and the embargo. Raises ValidationError when the
    version is a draft or withdrawn, is already published, or the embargo day is out of range.
    """
    # Lock the version row: two PIs publishing at once wait here, and the second is told it is
    # already published (instead of meeting the one-to-one constraint as a server error).
    version = (
        ProtocolVersion.objects.select_for_update(of=("self",))
        .select_related("protocol", "withdrawal")
        .get(pk=version.pk)
    )
    _check_publishable(version)
    existing = Publication.objects.filter(version=version).first()
    if existing is not None:
        raise ValidationError(
            {
                "version": f"{version.protocol.code} v{version.label} was already published on "
                f"{existing.published_at:%Y-%m-%d}; a publication is never repeated or undone."
            }
        )
    today = today_utc()
    if embargo_until is not None:
        if embargo_until <= today:
            raise ValidationError(
                {"embargo_until": f"The embargo must end after today ({today}, UTC)."}
            )
        if embargo_until > embargo_limit(today):
            raise ValidationError(
                {
                    "embargo_until": f"An embargo lasts at most {MAX_EMBARGO_YEARS} years: "
                    f"the last day allowed is {embargo_limit(today)}."
                }
            )
    publication = Publication(
        version=version,
        published_by=user,
        embargo_until=embargo_until,
        public_since=None if embargo_until else timezone.now(),
        authors=(authors or "").strip() or _default_authors(user),
    )
    full_clean_save(publication)
    when = f"under embargo until {embargo_until} (UTC)" if embargo_until else "public at once"
    version_log_append(
        version,
        kind=EntryKind.REGISTRY,
        rationale=f"Published {version.protocol.code} v{version.label}, {when}.",
        actor=user,
    )
    return publication


def _end_embargo(publication: Publication, *, user: User | None, why: str) -> bool:
    # The conditional UPDATE claims the change: a second caller (the beat task racing the PI,
    # or the task running twice) updates nothing and writes nothing.
    claimed = Publication.objects.filter(pk=publication.pk, public_since__isnull=True).update(
        public_since=timezone.now()
    )
    if claimed != 1:
        return False
    version = ProtocolVersion.objects.select_related("protocol").get(pk=publication.version_id)
    version_log_append(
        version,
        kind=EntryKind.REGISTRY,
        rationale=f"The embargo on {version.protocol.code} v{version.label} ended {why}; "
        "it is public from now on.",
        actor=user,
    )
    return True


@transaction.atomic
def embargo_end(*, publication: Publication, user: User) -> Publication:
    """End ``publication``'s embargo now, before its day (the PI's choice). Writes a log entry.
    Raises ValidationError when the version is already public."""
    if not _end_embargo(publication, user=user, why="early, at the PI's request"):
        raise ValidationError({"embargo": "This version is already public."})
    publication.refresh_from_db()
    return publication


def embargoes_end_due(*, today: date | None = None) -> list[int]:
    """End every embargo whose day has come (``today``, UTC, by default): the beat task's body.

    Idempotent: each publication is claimed by a conditional UPDATE in its own transaction, so
    running twice, or alongside a PI ending one early, ends each embargo once and logs it once.
    Returns the ids of the publications it made public.
    """
    today = today or today_utc()
    due = Publication.objects.filter(public_since__isnull=True, embargo_until__lte=today)
    ended = []
    for publication in due.order_by("pk"):
        with transaction.atomic():
            if _end_embargo(
                publication, user=None, why=f"on its day ({publication.embargo_until})"
            ):
                ended.append(publication.pk)
    return ended


@transaction.atomic
def view_link_create(
    *, version: ProtocolVersion, user: User, anonymised: bool = False, note: str = ""
) -> ViewLink:
    """A view-only link to the frozen ``version`` (for peer review before publication).

    The log entry names the link's number and whether it is anonymised, never its token or
    note (the log becomes public). Raises ValidationError for a draft or withdrawn version.
    """
    _check_publishable(version)
    link = ViewLink(
        version=version,
        token=secrets.token_urlsafe(32),
        note=(note or "").strip(),
        anonymised=anonymised,
        created_by=user,
    )
    full_clean_save(link)
    kind = "an anonymised" if anonymised else "a"
    version_log_append(
        version,
        kind=EntryKind.VIEW_LINK,
        rationale=f"Created {kind} view-only link (no. {link.pk}) to "
        f"{version.protocol.code} v{version.label}.",
        actor=user,
    )
    return link


@transaction.atomic
def view_link_revoke(*, link: ViewLink, user: User) -> ViewLink:
    """Revoke ``link``: from now on it answers 404. Raises ValidationError when it already is."""
    claimed = ViewLink.objects.filter(pk=link.pk, revoked_at__isnull=True).update(
        revoked_at=timezone.now(), revoked_by=user
    )
    if claimed != 1:
        raise ValidationError({"link": "This view-only link was already revoked."})
    version = ProtocolVersion.objects.select_related("protocol").get(pk=link.version_id)
    version_log_append(
        version,
        kind=EntryKind.VIEW_LINK,
        rationale=f"Revoked view-only link no. {link.pk} to "
        f"{version.protocol.code} v{version.label}.",
        actor=user,
    )
    link.refresh_from_db()
    return link


@transaction.atomic
def view_link_first_use(*, link: ViewLink) -> bool:
    """Record the first opening of ``link`` (once: later openings write nothing). Returns whether
    this was the first."""
    claimed = ViewLink.objects.filter(pk=link.pk, first_used_at__isnull=True).update(
        first_used_at=timezone.now()
    )
    if claimed != 1:
        return False
    version = link.version
    version_log_append(
        version,
        kind=EntryKind.VIEW_LINK,
        rationale=f"View-only link no. {link.pk} to {version.protocol.code} v{version.label} "
        "was opened for the first time.",
    )
    return True


@transaction.atomic
def run_publish(*, run: AnalysisRun, user: User) -> RunPublication:
    """Make the finished analysis ``run`` public (its report, hashes, downloads).

    Only once the version's outcomes are unsealed and the version is published (the run's page
    opens when the version is public). Raises ValidationError otherwise, or when the run did not
    succeed or is already published.
    """
    version = run.version
    name = f"analysis run {run.number} of {version.protocol.code} v{version.label}"
    if run.state != RunState.SUCCEEDED:
        raise ValidationError({"run": f"{name} has no result (it is {run.state})."})
    if not outcomes_visible(version):
        raise ValidationError(
            {"run": f"The outcomes of {version.protocol.code} v{version.label} are still sealed."}
        )
    if not Publication.objects.filter(version=version).exists():
        raise ValidationError({"run": "Publish the version before its analysis runs."})
    if RunPublication.objects.filter(run=run).exists():
        raise ValidationError({"run": f"{name} is already published."})
    publication = RunPublication(run=run, published_by=user)
    full_clean_save(publication)
    version_log_append(
        version,
        kind=EntryKind.REGISTRY,
        rationale=f"Published {name} (result {run.result_id}).",
        actor=user,
        refs=[run_ref(run)],
    )
    return publication
