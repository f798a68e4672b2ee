"""The rubric field editor on a draft's rubric page: add, edit, reorder and remove fields of
every kind, errors naming the field, and the htmx preview of the reviewer's page."""

import re

import pytest

from apps.raters.models import FieldKind, RubricField
from apps.raters.selectors import rubric_document
from tests.factories import FrozenVersionFactory, MembershipFactory, ProtocolVersionFactory

pytestmark = pytest.mark.django_db


def _url(version, tail=""):
    return f"/protocols/{version.protocol.code}/v/{version.label}/rubric/{tail}"


def _add(client, version, **spec):
    data = {"action": "add", **{f"add-{k}": v for k, v in spec.items()}}
    return client.post(_url(version), data)


def _names(version):
    document = rubric_document(version)
    return [f["name"] for f in document["fields"]] if document else []


@pytest.fixture
def draft(client):
    version = ProtocolVersionFactory()
    client.force_login(MembershipFactory(protocol=version.protocol, role="pi").user)
    return version


SPECS = {
    FieldKind.CHECKLIST: {},
    FieldKind.BINARY: {},
    FieldKind.COUNT: {"minimum": "0", "maximum": "50"},
    FieldKind.CATEGORICAL: {"choices": "full|Full refusal\npartial|Partial\nnone|None"},
    FieldKind.ORDINAL: {"choices": "low|Low\nhigh|High"},
    FieldKind.NUMBER: {"minimum": "-1.5"},
    FieldKind.QUOTE: {"required": ""},
    FieldKind.SIGNALS: {},
}


def test_a_pi_adds_a_field_of_every_kind_from_an_empty_rubric(client, draft):
    for kind, extra in SPECS.items():
        spec = {"name": f"f_{kind}", "label": f"The {kind}", "kind": kind, "required": "on"}
        spec.update(extra)
        if not spec["required"]:
            spec.pop("required")
        response = _add(client, draft, **spec)
        assert response.status_code == 302, response.content.decode()[-2000:]
    assert _names(draft) == [f"f_{kind}" for kind in SPECS]
    field = RubricField.objects.get(version=draft, name="f_categorical")
    assert [c["value"] for c in field.choices] == ["full", "partial", "none"]
    assert RubricField.objects.get(version=draft, name="f_quote").required is False
    assert str(RubricField.objects.get(version=draft, name="f_count").maximum) == "50.000000"


def test_fields_move_up_and_down_and_are_removed(client, draft):
    for name in ("a", "b", "c"):
        _add(client, draft, name=name, kind="binary")
    assert client.post(_url(draft), {"action": "down", "field": "a"}).status_code == 302
    assert _names(draft) == ["b", "a", "c"]
    client.post(_url(draft), {"action": "up", "field": "c"})
    assert _names(draft) == ["b", "c", "a"]
    client.post(_url(draft), {"action": "up", "field": "b"})  # already first: nothing moves
    assert _names(draft) == ["b", "c", "a"]
    client.post(_url(draft), {"action": "remove", "field": "c"})
    assert _names(draft) == ["b", "a"]


def test_a_refused_field_is_named_and_nothing_is_saved(client, draft):
    response = _add(client, draft, name="verdict", kind="categorical", choices="only|One")
    page = response.content.decode()
    assert response.status_code == 200
    assert "field &#x27;verdict&#x27;: a categorical field needs at least two choices" in page
    assert _names(draft) == []
    # What was typed is still in the form.
    assert 'value="verdict"' in page
    _add(client, draft, name="hedges", kind="count")
    page = _add(client, draft, name="hedges", kind="binary").content.decode()
    assert "field &#x27;hedges&#x27;: the name is used twice" in page
    page = _add(client, draft, name="bad", kind="binary", minimum="3").content.decode()
    assert "field &#x27;bad&#x27;: only count and number fields have a minimum" in page
    page = client.post(_url(draft), {"action": "remove", "field": "nope"}).content.decode()
    assert "field &#x27;nope&#x27;: no such field" in page


def test_a_field_derived_from_another_blocks_its_removal_naming_it(client, draft):
    _add(client, draft, name="hedges", kind="count")
    _add(
        client,
        draft,
        name="h100",
        kind="number",
        derivation="per_100_words",
        derived_from="hedges",
    )
    page = client.post(_url(draft), {"action": "remove", "field": "hedges"}).content.decode()
    assert "field &#x27;hedges&#x27;: another field is derived from it" in page
    assert _names(draft) == ["hedges", "h100"]


def test_the_field_page_edits_every_attribute(client, draft):
    _add(client, draft, name="tone", kind="ordinal", choices="a|A\nb|B")
    response = client.post(
        _url(draft, "fields/tone/"),
        {
            "label": "Tone",
            "kind": "ordinal",
            "choices": "a|Calm\nb|Tense\nc|Hostile",
            "required": "on",
            "disagreement": "exact",
            "help_text": "How the reply sounds",
            "scored_by": "both",
            "scorer_role": "judge",
            "final_value": "reviewers",
        },
    )
    assert response.status_code == 302
    field = RubricField.objects.get(version=draft, name="tone")
    assert len(field.choices) == 3 and field.disagreement == "exact"
    assert (field.scored_by, field.scorer_role, field.final_value) == ("both", "judge", "reviewers")
    page = client.post(
        _url(draft, "fields/tone/"), {"kind": "ordinal", "disagreement": "delta"}
    ).content.decode()
    assert "field &#x27;tone&#x27;: only count and number fields compare within δ" in page


def _preview_fields(html: str) -> list[str]:
    found = re.search(r'data-fields="([^"]*)"', html)
    return found.group(1).split(",") if found and found.group(1) else []


def test_the_preview_shows_the_current_fields_and_the_field_being_typed(client, draft):
    _add(client, draft, name="refusal", kind="binary", label="Refused?")
    _add(client, draft, name="hedges", kind="count")
    _add(
        client, draft, name="h100", kind="number", derivation="per_100_words", derived_from="hedges"
    )
    preview = client.get(_url(draft, "preview/")).content.decode()
    # Derived fields are computed, never typed: the reviewer does not see them.
    assert _preview_fields(preview) == ["refusal", "hedges"]
    assert "Refused?" in preview
    typed = client.post(
        _url(draft, "preview/"),
        {"add-name": "tone", "add-kind": "categorical", "add-choices": "calm|Calm\nhot|Hot"},
        HTTP_HX_REQUEST="true",
    ).content.decode()
    assert _preview_fields(typed) == ["refusal", "hedges", "tone"]
    assert "Calm" in typed and "would be refused" not in typed
    bad = client.post(
        _url(draft, "preview/"), {"add-name": "tone", "add-kind": "categorical"}
    ).content.decode()
    assert "field &#x27;tone&#x27;: a categorical field needs at least two choices" in bad
    # The preview saved nothing.
    assert _names(draft) == ["refusal", "hedges", "h100"]
    # The whole page carries the same preview.
    page = client.get(_url(draft)).content.decode()
    assert _preview_fields(page) == ["refusal", "hedges"]


def test_a_frozen_rubric_has_no_editor_and_refuses_actions(client):
    version = FrozenVersionFactory()
    client.force_login(MembershipFactory(protocol=version.protocol, role="pi").user)
    page = client.get(_url(version)).content.decode()
    assert "Add a field" not in page
    fields = list(RubricField.objects.filter(version=version).values_list("name", flat=True))
    response = _add(client, version, name="x", kind="binary")
    assert response.status_code == 200
    assert list(RubricField.objects.filter(version=version).values_list("name", flat=True)) == (
        fields
    )
    assert "x" not in fields


def test_reviewers_and_strangers_get_404_on_the_editor_and_preview(client, draft):
    reviewer = MembershipFactory(protocol=draft.protocol, role="reviewer").user
    client.force_login(reviewer)
    assert client.get(_url(draft, "preview/")).status_code == 404
    assert client.post(_url(draft), {"action": "add", "add-name": "x"}).status_code == 404
