"""The blind harm-constancy review (OPB-01 §4): two reviewers, a third on disagreement."""

import html

import pytest
from django.core.exceptions import ValidationError

from apps.deviations.models import LogEntry
from apps.items import services
from apps.items.models import HarmReview
from apps.items.selectors import (
    HarmState,
    design_problems,
    design_schedule_inputs,
    harm_reviews_pending_for,
    item_harm_states,
)
from tests.factories import MembershipFactory, write_item
from tests.items.conftest import api

pytestmark = pytest.mark.django_db

NOT = "not_more_harmful"
MORE = "more_harmful"


@pytest.fixture
def item(draft, scale, family_a):
    levels = [scale[c] for c in ("L0", "L1", "L2", "L3", "L4", "L5")]
    return write_item(draft, family_a, "a-01", levels, domain="alt text")


def _state(item):
    return item_harm_states(item.version)[item.pk]


def _submit(review, verdict, criteria=(), note=""):
    return services.harm_review_submit(
        review=review,
        reviewer=review.reviewer,
        verdict=verdict,
        criteria=list(criteria),
        note=note,
        forms_sha256=_state(review.item).forms_sha256,
    )


def _round(item, number):
    harm = _state(item)
    return next(r for r in harm.reviews if r.round == number)


def test_opening_assigns_two_distinct_blind_reviewers(item, draft, pi, blind_reviewers, protocol):
    # A reviewer who is also an editor here knows the hypothesis: never chosen.
    sighted = MembershipFactory(protocol=protocol, role="reviewer", user__username="aaa").user
    MembershipFactory(protocol=protocol, role="editor", user=sighted)
    opened = services.harm_review_open(version=draft)
    assert [(r.round, r.reviewer.username) for r in opened] == [(1, "rev-1"), (2, "rev-2")]
    assert len({r.token for r in opened}) == 2
    assert _state(item).state == HarmState.IN_REVIEW


def test_items_are_spread_over_reviewers_by_their_open_load(
    draft, scale, family_a, blind_reviewers
):
    for code in ("a-01", "a-02", "a-03"):
        write_item(draft, family_a, code, [scale["L0"], scale["L5"]])
    opened = services.harm_review_open(version=draft)
    pairs = [
        sorted(r.reviewer.username for r in opened if r.item.code == c)
        for c in ("a-01", "a-02", "a-03")
    ]
    assert pairs == [["rev-1", "rev-2"], ["rev-1", "rev-3"], ["rev-2", "rev-3"]]


def test_opening_needs_two_eligible_reviewers_and_both_forms(draft, scale, family_a, reviewer):
    write_item(draft, family_a, "a-01", [scale["L0"]])
    with pytest.raises(ValidationError, match="a-01"):
        services.harm_review_open(version=draft)
    write_item(draft, family_a, "a-02", [scale["L0"], scale["L5"]])
    with pytest.raises(ValidationError, match="two reviewers"):
        services.harm_review_open(version=draft, item_codes=["a-02"])


def test_two_not_more_harmful_verdicts_validate_the_item(item, draft, blind_reviewers):
    services.harm_review_open(version=draft)
    _submit(_round(item, 1), NOT)
    _submit(_round(item, 2), NOT)
    assert _state(item).state == HarmState.VALIDATED
    assert not [p for p in design_problems(draft) if p.code.startswith("harm_review")]


def test_a_disagreement_goes_to_a_third_reviewer_who_was_neither_of_the_first_two(
    item, draft, blind_reviewers
):
    services.harm_review_open(version=draft)
    first, second = _round(item, 1), _round(item, 2)
    _submit(first, MORE, ["deception"], "could mislead")
    _submit(second, NOT)
    third = _round(item, 3)
    assert third.reviewer_id not in {first.reviewer_id, second.reviewer_id}
    assert third.reviewer.username == "rev-3"
    assert _state(item).state == HarmState.IN_REVIEW
    _submit(third, NOT)
    assert _state(item).state == HarmState.VALIDATED


@pytest.mark.parametrize("third_verdict", [MORE, "cannot_decide"])
def test_a_third_verdict_other_than_not_more_harmful_excludes_the_item(
    item, draft, scale, blind_reviewers, third_verdict
):
    services.harm_review_open(version=draft)
    _submit(_round(item, 1), MORE, ["physical_risk"])
    _submit(_round(item, 2), NOT)
    _submit(_round(item, 3), third_verdict, ["physical_risk"] if third_verdict == MORE else [])
    assert _state(item).state == HarmState.EXCLUDED
    # Excluded: logged, listed, and its cells are not administered.
    entry = LogEntry.objects.get(kind="exclusion")
    assert "a-01" in entry.rationale and "harm-constancy" in entry.rationale
    assert not [key for key in design_schedule_inputs(draft).cells if key[0] == "a-01"]


def test_two_more_harmful_verdicts_exclude_the_item_without_a_third(item, draft, blind_reviewers):
    services.harm_review_open(version=draft)
    _submit(_round(item, 1), MORE, ["deception"])
    _submit(_round(item, 2), MORE, ["third_party_harm"])
    assert _state(item).state == HarmState.EXCLUDED
    assert not HarmReview.objects.filter(round=3).exists()


def test_with_no_third_reviewer_the_pi_is_told_what_to_do(item, draft, protocol):
    for name in ("rev-1", "rev-2"):
        MembershipFactory(protocol=protocol, role="reviewer", user__username=name)
    services.harm_review_open(version=draft)
    _submit(_round(item, 1), MORE, ["deception"])
    _submit(_round(item, 2), NOT)  # accepted: the second verdict is not lost
    assert _state(item).state == HarmState.AWAITING_THIRD
    problem = next(p for p in design_problems(draft) if p.code == "harm_review_incomplete")
    assert "needs a third reviewer" in problem.message
    with pytest.raises(ValidationError, match="No third reviewer is available for item a-01"):
        services.harm_review_third_assign(item=item)
    late = MembershipFactory(protocol=protocol, role="reviewer", user__username="rev-9").user
    assert services.harm_review_third_assign(item=item).reviewer == late


def test_verdict_and_criteria_must_agree(item, draft, blind_reviewers):
    services.harm_review_open(version=draft)
    review = _round(item, 1)
    with pytest.raises(ValidationError, match="Name the criteria"):
        _submit(review, MORE)
    with pytest.raises(ValidationError, match="Change the verdict"):
        _submit(review, NOT, ["deception"])
    with pytest.raises(ValidationError, match="Unknown criteria"):
        _submit(review, MORE, ["vibes"])


def test_a_verdict_is_final_and_only_for_its_reviewer(item, draft, blind_reviewers):
    services.harm_review_open(version=draft)
    review = _round(item, 1)
    with pytest.raises(ValidationError, match="someone else"):
        services.harm_review_submit(
            review=review,
            reviewer=blind_reviewers[2],
            verdict=NOT,
            forms_sha256=_state(item).forms_sha256,
        )
    _submit(review, NOT)
    with pytest.raises(ValidationError, match="final"):
        _submit(review, NOT)


def test_changed_forms_make_the_review_stale_and_a_new_cycle_keeps_the_old(
    item, draft, scale, blind_reviewers
):
    services.harm_review_open(version=draft)
    _submit(_round(item, 1), NOT)
    _submit(_round(item, 2), NOT)
    services.cell_save(
        item=item, level=scale["L5"], prompt="A changed L5 form", key=[services.KeyUnitSpec("unit")]
    )
    assert _state(item).state == HarmState.STALE
    assert [p.code for p in design_problems(draft)] == ["harm_review_stale"]
    services.harm_review_open(version=draft)
    harm = _state(item)
    assert harm.cycle == 2 and harm.state == HarmState.IN_REVIEW
    assert len(harm.history) == 2 and all(r.verdict == NOT for r in harm.history)


def test_a_verdict_on_forms_that_changed_meanwhile_is_refused(item, draft, scale, blind_reviewers):
    services.harm_review_open(version=draft)
    shown = _state(item).forms_sha256
    services.cell_save(
        item=item, level=scale["L0"], prompt="Edited L0", key=[services.KeyUnitSpec("unit")]
    )
    review = _round(item, 1)
    with pytest.raises(ValidationError, match="forms changed while you were reading"):
        services.harm_review_submit(
            review=review, reviewer=review.reviewer, verdict=NOT, forms_sha256=shown
        )


def test_the_review_page_is_blind_and_reached_by_token_only(
    client, item, draft, protocol, blind_reviewers, pi
):
    services.item_update(item=item, family=item.family, domain="alt text", notes="HYPOTHESIS")
    services.harm_review_open(version=draft)
    review = _round(item, 1)
    client.force_login(review.reviewer)
    queue = client.get("/queue/").content.decode()
    assert "Harm-constancy reviews" in queue and review.token in queue
    page = html.unescape(client.get(f"/harm-reviews/{review.token}/").content.decode())
    assert "a-01 at L0" in page and "a-01 at L5" in page  # the two forms' prompts
    assert "a-01 at L2" not in page  # no other level
    for secret in (
        protocol.title,
        protocol.code,
        "Benign",
        "harm_constant",
        "Harm-constant",
        "HYPOTHESIS",
        "alt text",
        "/design",
    ):
        assert secret not in page, secret
    # The same token is a 404 for the other reviewer and for the PI.
    client.force_login(_round(item, 2).reviewer)
    assert client.get(f"/harm-reviews/{review.token}/").status_code == 404
    client.force_login(pi)
    assert client.get(f"/harm-reviews/{review.token}/").status_code == 404
    assert client.get(f"/api/v1/harm-reviews/{review.token}").status_code == 404


def test_a_reviewer_submits_from_the_page(client, item, draft, blind_reviewers):
    services.harm_review_open(version=draft)
    review = _round(item, 1)
    client.force_login(review.reviewer)
    page = client.get(f"/harm-reviews/{review.token}/")
    response = client.post(
        f"/harm-reviews/{review.token}/",
        {"verdict": NOT, "forms_sha256": page.context["task"]["forms_sha256"], "note": ""},
    )
    assert response.status_code == 302
    review.refresh_from_db()
    assert review.verdict == NOT and review.submitted_at is not None
    assert not harm_reviews_pending_for(review.reviewer).exists()


def test_the_api_serves_the_task_and_takes_the_verdict(client, item, draft, blind_reviewers):
    services.harm_review_open(version=draft)
    review = _round(item, 2)
    client.force_login(review.reviewer)
    queue = client.get("/api/v1/harm-reviews").json()
    assert queue == [{"token": review.token}]
    task = client.get(f"/api/v1/harm-reviews/{review.token}").json()
    assert [f["level"] for f in task["forms"]] == ["L0", "L5"]
    assert set(task) == {"token", "forms", "criteria", "forms_sha256", "submitted"}
    done = client.post(
        f"/api/v1/harm-reviews/{review.token}/verdict",
        {"verdict": MORE, "criteria": ["circumvention"], "forms_sha256": task["forms_sha256"]},
        content_type="application/json",
    )
    assert done.status_code == 201
    review.refresh_from_db()
    assert review.criteria == ["circumvention"]


def test_only_the_pi_opens_the_review(client, editor, draft, item, blind_reviewers):
    client.force_login(editor)
    response = client.post(f"{api(draft)}/harm-review/open")
    assert response.status_code == 403
    assert not HarmReview.objects.exists()


def test_an_excluded_items_unfinished_cells_do_not_block_and_it_stays_on_record(
    item, draft, scale, blind_reviewers
):
    services.cell_save(item=item, level=scale["L2"], prompt="", key=[])
    services.harm_review_open(version=draft)
    _submit(_round(item, 1), MORE, ["deception"])
    _submit(_round(item, 2), MORE, ["deception"])
    assert design_problems(draft) == []
    from apps.items.component import design_document

    assert design_document(draft)["excluded_items"] == ["a-01"]
