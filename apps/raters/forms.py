"""Forms of the raters' pages."""

from django import forms

from apps.protocols.parameters import decimal_text
from apps.raters.models import Derivation, Disagreement, FieldKind, FinalValue, ScoredBy


class RubricPublishForm(forms.Form):
    """Seed 003: publishing the rubric text cannot be undone (a content address served "forever"),
    so the page asks for the protocol's code typed out, as unsealing and freezing do.

    ``code``: the protocol code the typed confirmation must equal (whitespace around it ignored).
    """

    confirmation = forms.CharField(
        label="Type the protocol code to confirm",
        max_length=200,
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
    )

    def __init__(self, *args, code: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.code = code

    def clean_confirmation(self) -> str:
        typed = self.cleaned_data["confirmation"].strip()
        if typed != self.code:
            raise forms.ValidationError(
                f"Not published: type the protocol code {self.code} exactly to confirm; "
                "publishing cannot be undone."
            )
        return typed


class RubricFieldForm(forms.Form):
    """One rubric field as the PI types it (add and edit pages). It only parses: every rule of a
    field (choices for categorical/ordinal only, bounds for count/number only, a derivation's
    source…) is checked by ``apps.raters.services.rubric``, which names the field.

    ``choices`` is typed one per line as ``value|label``. ``spec(present=…)`` gives the
    service's attribute dict; on the edit page only the attributes posted are changed.
    """

    name = forms.CharField(
        label="Name",
        required=False,
        max_length=64,
        help_text="Letters, digits, - and _ (e.g. refusal); the key the scores are stored under.",
    )
    label = forms.CharField(label="Label shown to reviewers", required=False, max_length=200)
    kind = forms.ChoiceField(
        label="Kind", required=False, choices=[("", "⟨ choose ⟩"), *FieldKind.choices]
    )
    required = forms.BooleanField(label="Required", required=False, initial=True)
    choices = forms.CharField(
        label="Choices (categorical and ordinal)",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
        help_text="One per line, in order: value|label.",
    )
    minimum = forms.CharField(label="Minimum (count and number)", required=False, max_length=40)
    maximum = forms.CharField(label="Maximum (count and number)", required=False, max_length=40)
    default = forms.CharField(
        label="Default (count and number)",
        required=False,
        max_length=40,
        help_text="Shown filled in and stored unless the reviewer changes it. A new count field "
        "defaults to 0 when this is left empty; on a field's own page, empty means no default.",
    )
    group = forms.CharField(label="Group", required=False, max_length=64)
    help_text = forms.CharField(label="Help for reviewers", required=False, max_length=500)
    derivation = forms.ChoiceField(label="Derivation", required=False, choices=Derivation.choices)
    derived_from = forms.CharField(label="Derived from (a field's name)", required=False)
    disagreement = forms.ChoiceField(
        label="Disagreement between reviewers", required=False, choices=Disagreement.choices
    )
    scored_by = forms.ChoiceField(
        label="Scored by", required=False, choices=ScoredBy.choices, initial=ScoredBy.REVIEWERS
    )
    scorer_role = forms.CharField(label="Scorer role", required=False, max_length=64)
    final_value = forms.ChoiceField(
        label="Whose value is final", required=False, choices=FinalValue.choices
    )

    @staticmethod
    def initial_for(field) -> dict:
        """The form's initial values for an existing ``RubricField``."""
        initial = {name: getattr(field, name) for name in RUBRIC_FORM_ATTRIBUTES}
        initial["choices"] = "\n".join(
            f"{c.get('value', '')}|{c.get('label', '')}"
            for c in field.choices or []
            if isinstance(c, dict)
        )
        for bound in ("minimum", "maximum", "default"):
            value = getattr(field, bound)
            initial[bound] = "" if value is None else decimal_text(value)
        return initial

    def spec(self, *, present=None) -> dict:
        """The attributes for ``rubric_field_add`` / ``rubric_field_update``; with ``present``
        (the posted keys), only those posted (``required`` always: an unticked box is absent)."""
        data = self.cleaned_data
        spec: dict = {}
        for name in RUBRIC_FORM_ATTRIBUTES:
            if present is not None and name not in present and name != "required":
                continue
            value = data.get(name)
            if name == "default" and present is None and not (value or "").strip():
                continue  # a new field: the service's default for its kind (0 for a count)
            if value is None and name not in ("minimum", "maximum", "default"):
                value = ""  # an invalid choice: the service names what is wrong
            if name == "choices":
                value = _choices_from_text(value or "")
            elif name in ("minimum", "maximum", "default"):
                value = (value or "").strip() or None
            elif isinstance(value, str):
                value = value.strip()
            spec[name] = value
        if present is None and not spec.get("label"):
            spec["label"] = spec.get("name", "")
        return spec


RUBRIC_FORM_ATTRIBUTES = tuple(RubricFieldForm.base_fields)


def _choices_from_text(text: str) -> list[dict]:
    choices = []
    for line in text.splitlines():
        value, _, label = line.partition("|")
        if value.strip():
            choices.append({"value": value.strip(), "label": label.strip() or value.strip()})
    return choices
