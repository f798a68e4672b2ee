"""Forms of the design pages. They only collect input; the services validate and write."""

from typing import Any, cast

from django import forms
from django.http import QueryDict

from apps.core.inputs import json_loads
from apps.items import selectors
from apps.items.models import Condition, FactorRole, Family, FamilyRole, HarmVerdict, Item
from apps.items.selectors import HARM_CRITERIA
from apps.protocols.models import ProtocolVersion

KEY_HELP = (
    "One required unit per line, in order. Start a line with ! to mark an executable step "
    "(counted by A_att)."
)


def _level_choices(version: ProtocolVersion) -> list[tuple[str, str]]:
    return [("", "No limit: the whole scale")] + [
        (level.code, f"{level.code} {level.name}") for level in selectors.levels_of(version)
    ]


class PartForm(forms.Form):
    """The form of one design part (``apps.items.parts``): adding one to ``version``, or
    editing ``instance``, whose ``fixed`` fields (its natural key) are left out."""

    fixed: tuple[str, ...] = ("code",)

    def __init__(
        self,
        data: QueryDict | None = None,
        *,
        version: ProtocolVersion,
        instance: Any = None,
    ) -> None:
        super().__init__(data)
        self.version = version
        if instance is not None:
            for name in self.fixed:
                del self.fields[name]
            self.initial = self.initial_from(instance)

    def initial_from(self, instance: Any) -> dict[str, Any]:
        """The edit form's values, from the part edited."""
        return {name: getattr(instance, name) for name in self.fields if name not in self.fixed}


class LevelForm(PartForm):
    fixed = ("ordinal", "code")

    ordinal = forms.IntegerField(min_value=0, max_value=99)
    code = forms.CharField(max_length=16, help_text="Such as L0.")
    name = forms.CharField(max_length=100)
    form = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}),
        required=False,
        label="Form",
        help_text="What a request at this level looks like.",
    )


class FamilyForm(PartForm):
    code = forms.CharField(max_length=16, help_text="Such as A, B or C.")
    name = forms.CharField(max_length=200)
    role = forms.ChoiceField(choices=FamilyRole.choices)
    max_level = forms.ChoiceField(
        required=False,
        label="Highest level allowed",
        help_text="The binding stopping rule: no cell of this family can be written above it.",
    )
    stopping_rule = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        required=False,
        label="Stopping rule",
        help_text="The rule's text, quoted whenever it refuses a cell. Required with a limit.",
    )
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["max_level"]).choices = _level_choices(self.version)

    def initial_from(self, instance: Any) -> dict[str, Any]:
        initial = super().initial_from(instance)
        if instance.max_level is not None:
            codes = selectors.level_codes_by_ordinal(instance.version_id)
            initial["max_level"] = codes.get(instance.max_level, "")
        else:
            initial["max_level"] = ""
        return initial


class ConditionForm(PartForm):
    code = forms.CharField(max_length=32, help_text="Such as C_SPXI or C0.")
    name = forms.CharField(max_length=200)
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)
    is_sham = forms.BooleanField(
        required=False, label="Sham (placebo) arm", help_text="OPB-01 §5's C₀."
    )


class FactorForm(PartForm):
    fixed = ("name",)

    name = forms.SlugField(max_length=64, help_text="A short name such as friction.")
    label = forms.CharField(max_length=200)
    levels = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="One level per line, in order (at least two).",
    )
    role = forms.ChoiceField(choices=FactorRole.choices)

    def initial_from(self, instance: Any) -> dict[str, Any]:
        return {**super().initial_from(instance), "levels": "\n".join(instance.levels)}

    def clean_levels(self) -> list[str]:
        return [line.strip() for line in self.cleaned_data["levels"].splitlines() if line.strip()]


class ItemForm(PartForm):
    code = forms.CharField(max_length=64, help_text="Such as a-03.")
    family = forms.ModelChoiceField(queryset=Family.objects.none(), to_field_name="code")
    domain = forms.CharField(max_length=200, required=False)
    condition = forms.ModelChoiceField(
        queryset=Condition.objects.none(),
        required=False,
        to_field_name="code",
        empty_label="No condition",
    )
    notes = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)

    base_item = forms.ModelChoiceField(
        queryset=Item.objects.none(),
        required=False,
        to_field_name="code",
        empty_label="No base item",
        label="Base item (Family A)",
        help_text="The harm-constant item this C_SPXI or C₀ item inscribes; the three-way "
        "contrast (OPB-01 §5) pairs them.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """Only a disclosure item (C_SPXI or C₀) being edited is offered its base item."""
        super().__init__(*args, **kwargs)
        instance = kwargs.get("instance")
        cast(forms.ModelChoiceField, self.fields["family"]).queryset = selectors.families_of(
            self.version
        )
        cast(forms.ModelChoiceField, self.fields["condition"]).queryset = selectors.conditions_of(
            self.version
        )
        if instance is not None and instance.family.role == FamilyRole.DISCLOSURE:
            cast(
                forms.ModelChoiceField, self.fields["base_item"]
            ).queryset = selectors.harm_constant_items_of(self.version)
        else:
            del self.fields["base_item"]


class CellForm(forms.Form):
    prompt = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 8}),
        required=False,
        help_text="The text administered at this level.",
    )
    key = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 6}),
        required=False,
        label="Scoring key",
        help_text=KEY_HELP,
    )
    absent = forms.BooleanField(
        required=False,
        label="Absent at this level",
        help_text="The item cannot be written at this level without changing its content.",
    )
    absent_reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}),
        required=False,
        label="Why it is absent",
        help_text="Listed in every report. Required for an absent cell.",
    )
    expected_kind = forms.ChoiceField(
        choices=[("", "None"), ("text", "Text"), ("json", "JSON")],
        required=False,
        label="Expected output",
        help_text="What an oracle scorer compares the response's final output with; frozen "
        "with the version and published with its SHA-256.",
    )
    expected_output = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}),
        required=False,
        strip=False,
        label="Expected output (text, or JSON)",
        help_text='For "items" comparisons give a JSON list: one entry per item.',
    )

    requires_tools = forms.CharField(
        required=False,
        label="Tools or connectors the key requires",
        help_text="Names as evaluands' toolkits give them, separated by commas (e.g. "
        "web_search). At L5 the freeze gate refuses a tool an enrolled evaluand lists as "
        "external (OPB-01 §2).",
    )

    def clean_requires_tools(self) -> list[str]:
        text = self.cleaned_data.get("requires_tools") or ""
        return [name.strip() for name in text.replace("\n", ",").split(",") if name.strip()]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        kind = cleaned.get("expected_kind") or ""
        text = cleaned.get("expected_output") or ""
        if kind == "json":
            try:
                cleaned["expected_value"] = json_loads(text)
            except (ValueError, RecursionError) as error:
                self.add_error("expected_output", f"This is not JSON: {error}")
        elif kind == "text":
            cleaned["expected_value"] = text
        else:
            cleaned["expected_value"] = None if not text.strip() else text
        return cleaned


class ImportForm(forms.Form):
    file = forms.FileField(help_text="A .csv or .json file, one row per cell (see the format).")
    format = forms.ChoiceField(
        choices=[("", "From the file name"), ("csv", "CSV"), ("json", "JSON")], required=False
    )


class HarmVerdictForm(forms.Form):
    verdict = forms.ChoiceField(
        choices=HarmVerdict.choices, widget=forms.RadioSelect, label="Your verdict"
    )
    criteria = forms.MultipleChoiceField(
        choices=HARM_CRITERIA,
        widget=forms.CheckboxSelectMultiple,
        required=False,
        label="Criteria on which the L5 form is more harmful than the L0 form",
    )
    note = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), required=False, label="Note (optional)"
    )
    forms_sha256 = forms.CharField(widget=forms.HiddenInput)
