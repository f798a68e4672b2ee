"""Revocation reaches harm-constancy reviews too (issue #18): a reviewer who loses the role loses
their unanswered reviews at once, and another blind reviewer is given the round."""

import pytest
from django.core.exceptions import ValidationError

from apps.accounts.models import Membership
from apps.items import services
from apps.items.models import HarmReview
from apps.items.selectors import HarmState, harm_reviews_pending_for, item_harm_states
from apps.protocols.services import protocol_member_remove
from tests.factories import MembershipFactory, write_item

pytestmark = pytest.mark.django_db

NOT = "not_more_harmful"


@pytest.fixture
def item(draft, scale, family_a):
    levels = [scale[c] for c in ("L0", "L1", "L2", "L3", "L4", "L5")]
    return write_item(draft, family_a, "a-01", levels, domain="alt text")


def _state(item):
    return item_harm_states(item.version)[item.pk]


def _remove(protocol, user, pi):
    membership = Membership.objects.get(protocol=protocol, user=user, role="reviewer")
    protocol_member_remove(membership=membership, actor=pi, reason="left the project")


def test_a_removed_reviewers_pending_review_is_refused_and_given_to_another(
    item, draft, protocol, pi, blind_reviewers
):
    services.harm_review_open(version=draft)
    first = next(r for r in _state(item).reviews if r.round == 1)
    removed = first.reviewer
    forms = _state(item).forms_sha256
    _remove(protocol, removed, pi)

    assert not harm_reviews_pending_for(removed).exists()
    with pytest.raises(ValidationError, match="no longer hold the reviewer role"):
        services.harm_review_submit(review=first, reviewer=removed, verdict=NOT, forms_sha256=forms)
    harm = _state(item)
    assert harm.state == HarmState.IN_REVIEW
    by_round = {r.round: r.reviewer for r in harm.reviews}
    assert set(by_round) == {1, 2}
    assert by_round[1] != removed and by_round[1] != by_round[2]
    # The replacement's verdict counts, as the removed reviewer's would have.
    for review in harm.reviews:
        services.harm_review_submit(
            review=review, reviewer=review.reviewer, verdict=NOT, forms_sha256=forms
        )
    assert _state(item).state == HarmState.VALIDATED


def test_a_round_nobody_can_take_waits_for_a_new_reviewer_then_opens(
    item, draft, protocol, pi, blind_reviewers
):
    services.harm_review_open(version=draft)
    # Only two blind reviewers remain after rev-3 leaves; then one of the two in review leaves.
    _remove(protocol, blind_reviewers[2], pi)
    leaving = next(r for r in _state(item).reviews if r.round == 2).reviewer
    _remove(protocol, leaving, pi)
    harm = _state(item)
    assert [r.round for r in harm.reviews] == [1]
    assert harm.state == HarmState.IN_REVIEW

    newcomer = MembershipFactory(protocol=protocol, role="reviewer", user__username="rev-9").user
    opened = services.harm_review_open(version=draft)
    assert [(r.round, r.reviewer) for r in opened] == [(2, newcomer)]
    assert HarmReview.objects.filter(item=item, cycle=harm.cycle).count() == 2


def test_submitted_verdicts_stay_when_their_reviewer_leaves(
    item, draft, protocol, pi, blind_reviewers
):
    services.harm_review_open(version=draft)
    first = next(r for r in _state(item).reviews if r.round == 1)
    services.harm_review_submit(
        review=first,
        reviewer=first.reviewer,
        verdict=NOT,
        forms_sha256=_state(item).forms_sha256,
    )
    _remove(protocol, first.reviewer, pi)
    kept = HarmReview.objects.get(pk=first.pk)
    assert kept.verdict == NOT and kept.submitted_at is not None
