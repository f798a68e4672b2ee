from typing import Any, cast

from django import forms

from apps.deviations.models import MANUAL_KINDS, EntryKind


class LogFilterForm(forms.Form):
    """The log page's filters, read from GET parameters; every one is optional."""

    kind = forms.ChoiceField(
        required=False, choices=[("", "Any kind"), *EntryKind.choices], label="Kind"
    )
    actor = forms.ChoiceField(required=False, label="Actor")
    date_from = forms.DateField(
        required=False, label="From (UTC day)", widget=forms.DateInput(attrs={"type": "date"})
    )
    date_to = forms.DateField(
        required=False, label="To (UTC day)", widget=forms.DateInput(attrs={"type": "date"})
    )

    def __init__(self, *args, actors: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        # self.fields is typed as plain Fields; "actor" is the ChoiceField declared above.
        actor = cast(forms.ChoiceField, self.fields["actor"])
        actor.choices = [("", "Anyone"), *((name, name) for name in actors)]

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data  # what Form.clean returns; its stub allows None
        start, end = cleaned.get("date_from"), cleaned.get("date_to")
        if start and end and start > end:
            self.add_error("date_to", "The end of the range is before its start.")
        return cleaned


class DeviationForm(forms.Form):
    """A deviation recorded by hand. Whether outcome data had been seen is not asked: the
    outcome seal says it."""

    kind = forms.ChoiceField(
        choices=[(k.value, k.label) for k in MANUAL_KINDS],
        initial=EntryKind.DEVIATION,
        label="Kind",
        help_text="A reorder (provider availability, safety response) or a platform loss is "
        "recorded with its own kind; anything else is a deviation.",
    )
    occurred_on = forms.DateField(
        label="Date it happened",
        widget=forms.DateInput(attrs={"type": "date"}),
        help_text="The day the deviation took place (UTC); not in the future.",
    )
    rationale = forms.CharField(
        label="Rationale",
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text="What deviated from the frozen protocol, and why.",
    )
    version = forms.TypedChoiceField(
        required=False,
        coerce=int,
        empty_value=None,
        label="Version concerned",
        help_text="Optional: the protocol version this deviation concerns.",
    )

    def __init__(self, *args, versions: list, **kwargs):
        super().__init__(*args, **kwargs)
        # self.fields is typed as plain Fields; "version" is the choice field declared above.
        version = cast(forms.TypedChoiceField, self.fields["version"])
        version.choices = [
            ("", "None in particular"),
            *((v.pk, f"v{v.label} ({v.state})") for v in versions),
        ]


class UnsealForm(forms.Form):
    confirmation = forms.CharField(
        label="Type the protocol code to confirm",
        max_length=200,
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
    )
