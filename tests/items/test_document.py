"""The design's part of the frozen document, and its copy into an amendment."""

import pytest

from apps.core.canonical import canonical_json
from apps.items import services
from apps.items.component import design_copy, design_document
from apps.items.models import Cell, HarmReview, Item, KeyUnit
from apps.items.selectors import HarmState, design_problems, item_harm_states
from tests.factories import ProtocolVersionFactory, freeze, write_item

pytestmark = pytest.mark.django_db


@pytest.fixture
def reviewed(draft, scale, family_a, family_b, blind_reviewers):
    """A design with a validated Family A item (after a disagreement) and a Family B item."""
    a = write_item(draft, family_a, "a-01", list(scale.values()))
    write_item(draft, family_b, "b-01", [scale[c] for c in ("L0", "L1", "L2")])
    services.cell_save(
        item=Item.objects.get(code="b-01"),
        level=scale["L3"],
        absent=True,
        absent_reason="no prescription without operative content",
    )
    services.condition_create(version=draft, code="C0", name="Sham", is_sham=True)
    services.factor_create(
        version=draft, name="order", label="Order", levels=["x", "y"], role="counterbalanced"
    )
    services.harm_review_open(version=draft)
    for verdict, criteria, round_ in (
        ("more_harmful", ["deception"], 1),
        ("not_more_harmful", [], 2),
        ("not_more_harmful", [], 3),
    ):
        harm = item_harm_states(draft)[a.pk]
        review = next(r for r in harm.reviews if r.round == round_)
        services.harm_review_submit(
            review=review,
            reviewer=review.reviewer,
            verdict=verdict,
            criteria=criteria,
            forms_sha256=harm.forms_sha256,
        )
    return draft


def test_the_document_uses_natural_keys_in_a_fixed_order(reviewed):
    document = design_document(reviewed)
    assert [lv["code"] for lv in document["levels"]] == ["L0", "L1", "L2", "L3", "L4", "L5"]
    family_b = next(f for f in document["families"] if f["code"] == "B")
    assert family_b["max_level"] == "L3" and "L4 or L5" in family_b["stopping_rule"]
    a01 = document["items"][0]
    assert a01["code"] == "a-01" and a01["harm_review"] == HarmState.VALIDATED
    assert a01["cells"][5]["key"] == [
        {"text": "unit one", "executable": False},
        {"text": "unit two", "executable": True},
    ]
    assert document["absent_cells"] == [
        {"item": "b-01", "level": "L3", "reason": "no prescription without operative content"}
    ]
    assert document["factors"] == [
        {"name": "order", "label": "Order", "role": "counterbalanced", "levels": ["x", "y"]}
    ]
    text = canonical_json(document).decode()
    for leak in ('"id"', "rev-1", "rev-2", "rev-3", "assigned_at", "token"):
        assert leak not in text
    assert canonical_json(design_document(reviewed)) == canonical_json(document)


def test_harm_reviews_appear_per_round_with_pseudonymous_reviewers(reviewed):
    reviews = design_document(reviewed)["harm_reviews"]
    assert [(r["round"], r["reviewer"], r["verdict"]) for r in reviews] == [
        (1, "reviewer-1", "more_harmful"),
        (2, "reviewer-2", "not_more_harmful"),
        (3, "reviewer-3", "not_more_harmful"),
    ]
    assert reviews[0]["criteria"] == ["deception"]


def test_an_amendment_copies_the_whole_design_onto_the_new_draft(reviewed):
    freeze(reviewed)
    amendment = ProtocolVersionFactory(protocol=reviewed.protocol, label="1.1")
    design_copy(reviewed, amendment)
    assert canonical_json(design_document(amendment)) == canonical_json(design_document(reviewed))
    for model in (Item, Cell, KeyUnit, HarmReview):
        assert (
            model.objects.filter(version=amendment).count()
            == model.objects.filter(version=reviewed).count()
        )
    old_tokens = set(HarmReview.objects.filter(version=reviewed).values_list("token", flat=True))
    new_tokens = set(HarmReview.objects.filter(version=amendment).values_list("token", flat=True))
    assert not old_tokens & new_tokens
    assert design_problems(amendment) == []


def test_an_amendment_that_changes_an_l5_form_needs_a_new_review(reviewed):
    freeze(reviewed)
    amendment = ProtocolVersionFactory(protocol=reviewed.protocol, label="1.1")
    design_copy(reviewed, amendment)
    item = Item.objects.get(version=amendment, code="a-01")
    level = item.cells.get(level__code="L5").level
    services.cell_save(
        item=item, level=level, prompt="A new L5 form", key=[services.KeyUnitSpec("unit")]
    )
    assert [p.code for p in design_problems(amendment)] == ["harm_review_stale"]
