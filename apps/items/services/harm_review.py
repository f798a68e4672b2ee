"""The blind harm-constancy review of harm-constant items (OPB-01 §4).

Two independent reviewers, blind to the hypothesis, see only an item's L0 and L5 forms and the
criteria stated in advance, and judge whether L5 is more harmful than L0. A disagreement goes to
a third reviewer who was neither of the first two; an item that is not validated is excluded.

Who reviews: people with the reviewer role on the protocol and no sighted role there (a PI,
editor or auditor knows the hypothesis). Assignment is first-available with load balancing,
deterministic rather than random: for each item (by code) the eligible reviewers with the
fewest reviews still open on this version, ties by username. Nothing about an item's content
steers who gets it, and the PI can see and reproduce why each reviewer was chosen.
"""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import cast

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from apps.accounts.models import Role, User
from apps.core.rows import full_clean_save
from apps.deviations.models import EntryKind
from apps.deviations.services import version_log_append
from apps.items.models import FamilyRole, HarmReview, HarmVerdict, Item
from apps.items.refs import item_ref
from apps.items.selectors import (
    HARM_CRITERIA_CODES,
    HarmState,
    ItemHarm,
    harm_reviewers_eligible,
    item_harm_states,
)
from apps.items.services.design import draft_locked
from apps.protocols.models import ProtocolVersion


def _open_load(version: ProtocolVersion) -> Counter[int]:
    return Counter(
        HarmReview.objects.filter(version=version, submitted_at__isnull=True).values_list(
            "reviewer_id", flat=True
        )
    )


def _new_review(*, item: Item, reviewer: User, cycle: int, round_: int, forms: str) -> HarmReview:
    review = HarmReview(
        version_id=item.version_id,
        item=item,
        reviewer=reviewer,
        cycle=cycle,
        round=round_,
        token=secrets.token_hex(16),
        forms_sha256=forms,
    )
    return full_clean_save(review)


@transaction.atomic
def harm_review_open(
    *, version: ProtocolVersion, item_codes: Iterable[str] | None = None
) -> list[HarmReview]:
    """Open the review of every harm-constant item that needs one (never opened, or stale
    because its L0 or L5 form changed since its verdicts: a new cycle starts, the old cycle
    stays as history and its unanswered reviews are withdrawn). ``item_codes`` limits it.

    Raises ValidationError when nothing needs opening, when an item lacks a written L0 or L5
    form (naming the items), or when fewer than two eligible reviewers exist.
    """
    version = draft_locked(version)
    states = item_harm_states(version)
    items = Item.objects.filter(version=version, family__role=FamilyRole.HARM_CONSTANT)
    if item_codes is not None:
        items = items.filter(code__in=list(item_codes))
    due = [
        item
        for item in items.order_by("code")
        if states[item.pk].state in (HarmState.NOT_OPENED, HarmState.STALE)
        or _rounds_missing(states[item.pk])
    ]
    if not due:
        raise ValidationError(
            "No harm-constant item needs its review opened: each is in review or resolved."
        )
    unreviewable = [item.code for item in due if states[item.pk].forms_sha256 is None]
    if unreviewable:
        raise ValidationError(
            f"Write the first- and last-level forms (L0 and L5) of {', '.join(unreviewable)} "
            "before opening their review: the reviewers compare the two."
        )
    eligible = harm_reviewers_eligible(protocol_id=version.protocol_id)
    if len(eligible) < 2:
        raise ValidationError(
            "A harm-constancy review needs two reviewers who hold no other role on this "
            f"protocol; it has {len(eligible)}. Add reviewers to the protocol first."
        )
    load = _open_load(version)
    opened = []
    for item in due:
        harm = states[item.pk]
        forms = cast(str, harm.forms_sha256)  # every due item's forms are written (above)
        if missing := _rounds_missing(harm):
            # A reviewer's review was withdrawn with their role: only that round is given again,
            # to someone not already reviewing the item in this cycle.
            taken = {review.reviewer_id for review in harm.reviews}
            for round_ in missing:
                free = [user for user in eligible if user.pk not in taken]
                if not free:
                    raise ValidationError(
                        f"Item {item.code} needs a reviewer for round {round_} who is not "
                        "already reviewing it; add a reviewer to the protocol first."
                    )
                reviewer = min(free, key=lambda user: (load[user.pk], user.username))
                opened.append(
                    _new_review(
                        item=item,
                        reviewer=reviewer,
                        cycle=harm.cycle,
                        round_=round_,
                        forms=forms,
                    )
                )
                taken.add(reviewer.pk)
                load[reviewer.pk] += 1
            continue
        if harm.state == HarmState.STALE:
            HarmReview.objects.filter(
                item=item, cycle=harm.cycle, submitted_at__isnull=True
            ).delete()
        cycle = harm.cycle + 1
        chosen = sorted(eligible, key=lambda user: (load[user.pk], user.username))[:2]
        for round_, reviewer in enumerate(chosen, start=1):
            opened.append(
                _new_review(
                    item=item,
                    reviewer=reviewer,
                    cycle=cycle,
                    round_=round_,
                    forms=forms,
                )
            )
            load[reviewer.pk] += 1
    return opened


def _rounds_missing(harm: ItemHarm) -> list[int]:
    # An item in review whose first or second review was withdrawn (its reviewer lost the role).
    if harm.state != HarmState.IN_REVIEW:
        return []
    rounds = {review.round for review in harm.reviews}
    return [round_ for round_ in (1, 2) if round_ not in rounds]


REVIEW_WITHDRAWN = (
    "This review was withdrawn: you no longer hold the reviewer role on this protocol, so your "
    "verdict was not stored."
)


@transaction.atomic
def harm_reviews_withdraw(*, protocol_id: int, reviewer: User) -> int:
    """Withdraw ``reviewer``'s unanswered harm-constancy reviews on the protocol's drafts and
    give each round to another eligible reviewer who is not already reviewing that item in the
    cycle (first-available, as ``harm_review_open`` chooses). Returns how many were withdrawn.

    Runs in the transaction that removes the reviewer role (the design component's
    ``on_role_removed``). A round with no one to take it stays open: the item is in review with
    that round missing, and ``harm_review_open`` gives it once a reviewer is added. Submitted
    reviews, and every review of a frozen version, are kept: they are the record.
    """
    pending = list(
        HarmReview.objects.select_for_update()
        .filter(
            reviewer=reviewer,
            submitted_at__isnull=True,
            version__protocol_id=protocol_id,
            version__state="draft",
        )
        .select_related("item__version")
        .order_by("pk")
    )
    if not pending:
        return 0
    HarmReview.objects.filter(pk__in=[review.pk for review in pending]).delete()
    eligible = [
        user for user in harm_reviewers_eligible(protocol_id=protocol_id) if user.pk != reviewer.pk
    ]
    for review in pending:
        version = review.item.version
        taken = set(
            HarmReview.objects.filter(item=review.item, cycle=review.cycle).values_list(
                "reviewer_id", flat=True
            )
        )
        free = [user for user in eligible if user.pk not in taken]
        if not free:
            continue
        load = _open_load(version)
        chosen = min(free, key=lambda user: (load[user.pk], user.username))
        _new_review(
            item=review.item,
            reviewer=chosen,
            cycle=review.cycle,
            round_=review.round,
            forms=review.forms_sha256,
        )
    return len(pending)


def on_role_removed(protocol_id: int, user: User, role: str) -> None:
    """The design component's hook: a reviewer who loses the role loses their unanswered
    harm-constancy reviews at once."""
    if role == Role.REVIEWER:
        harm_reviews_withdraw(protocol_id=protocol_id, reviewer=user)


def _third_candidates(item: Item, reviews: Sequence[HarmReview]) -> list[User]:
    first_two = {r.reviewer_id for r in reviews if r.round in (1, 2)}
    return [
        user
        for user in harm_reviewers_eligible(protocol_id=item.version.protocol_id)
        if user.pk not in first_two
    ]


def _assign_third(item: Item, harm: ItemHarm) -> HarmReview | None:
    candidates = _third_candidates(item, harm.reviews)
    if not candidates:
        return None
    load = _open_load(item.version)
    reviewer = min(candidates, key=lambda user: (load[user.pk], user.username))
    # Two verdicts on the current forms disagree (else the item is stale), so its forms exist.
    forms = cast(str, harm.forms_sha256)
    return _new_review(item=item, reviewer=reviewer, cycle=harm.cycle, round_=3, forms=forms)


@transaction.atomic
def harm_review_third_assign(*, item: Item) -> HarmReview:
    """Give a disagreement on ``item`` to a third reviewer who was neither of the first two.

    Raises ValidationError when the item is not waiting for one, or when no such reviewer
    exists (add one to the protocol, then try again).
    """
    draft_locked(item.version)
    harm = item_harm_states(item.version)[item.pk]
    if harm.state != HarmState.AWAITING_THIRD:
        raise ValidationError(
            f"Item {item.code}'s harm-constancy review is {harm.label}; "
            "only a disagreement goes to a third reviewer."
        )
    review = _assign_third(item, harm)
    if review is None:
        raise ValidationError(
            f"No third reviewer is available for item {item.code}: every reviewer without "
            "another role on this protocol was one of its first two. Add a reviewer to the "
            "protocol, then assign the third review."
        )
    return review


def _check_verdict(verdict: str, criteria: Sequence[str]) -> list[str]:
    if verdict not in HarmVerdict.values:
        raise ValidationError({"verdict": "Choose one of the three verdicts."})
    unknown = [c for c in criteria if c not in HARM_CRITERIA_CODES]
    if unknown:
        raise ValidationError({"criteria": f"Unknown criteria: {', '.join(unknown)}."})
    ordered = [c for c in HARM_CRITERIA_CODES if c in set(criteria)]
    if verdict == HarmVerdict.MORE_HARMFUL and not ordered:
        raise ValidationError(
            {"criteria": "Name the criteria on which the L5 form is more harmful than the L0."}
        )
    if verdict == HarmVerdict.NOT_MORE_HARMFUL and ordered:
        raise ValidationError(
            {
                "criteria": "You marked criteria on which L5 is more harmful than L0: then L5 "
                "is more harmful. Change the verdict or clear the criteria."
            }
        )
    return ordered


@transaction.atomic
def harm_review_submit(
    *,
    review: HarmReview,
    reviewer: User,
    verdict: str,
    criteria: Sequence[str] = (),
    note: str = "",
    forms_sha256: str,
) -> HarmReview:
    """Record ``reviewer``'s verdict on the forms they were shown (``forms_sha256``, as served
    with the task). A verdict is final. When it leaves the first two reviewers disagreeing, the
    third review is assigned if a third reviewer exists (otherwise the PI is told); when it
    excludes the item, the exclusion is written to the deviation log.

    Raises ValidationError if the review is not this reviewer's, already answered, withdrawn,
    the forms changed since they were shown, or the verdict and criteria do not agree.
    """
    version = draft_locked(review.version)
    locked = (
        HarmReview.objects.select_for_update().select_related("item").filter(pk=review.pk).first()
    )
    if locked is None:
        raise ValidationError(REVIEW_WITHDRAWN)
    review = locked
    if review.reviewer_id == reviewer.pk and reviewer.pk not in {
        user.pk for user in harm_reviewers_eligible(protocol_id=version.protocol_id)
    }:
        raise ValidationError(REVIEW_WITHDRAWN)
    if review.reviewer_id != reviewer.pk:
        raise ValidationError("This review is assigned to someone else.")
    if review.submitted_at is not None:
        raise ValidationError("You already gave your verdict on this review; it is final.")
    item = review.item
    harm = item_harm_states(version)[item.pk]
    if review.cycle != harm.cycle:
        raise ValidationError("This review was withdrawn: the item's forms changed.")
    if forms_sha256 != harm.forms_sha256:
        raise ValidationError(
            "The forms changed while you were reading them. Reload the page and judge the "
            "current forms."
        )
    review.criteria = _check_verdict(verdict, criteria)
    review.verdict, review.note = verdict, note.strip()
    review.forms_sha256, review.submitted_at = forms_sha256, timezone.now()
    full_clean_save(review)

    after = item_harm_states(version)[item.pk]
    if after.state == HarmState.AWAITING_THIRD:
        _assign_third(item, after)
    elif after.state == HarmState.EXCLUDED:
        verdicts = "; ".join(f"round {r.round}: {r.get_verdict_display()}" for r in after.reviews)
        version_log_append(
            version,
            kind=EntryKind.EXCLUSION,
            rationale=(
                f"Item {item.code} is excluded from {version} by its harm-constancy review "
                f"(cycle {after.cycle}; {verdicts}). Its cells are not administered."
            ),
            refs=[
                item_ref(item),
            ],
        )
    return review
