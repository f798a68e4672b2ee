from typing import cast

from django import forms
from django.conf import settings

from apps.core.forms import JSONField
from apps.core.inputs import json_loads
from apps.responses.formats import guess_format
from apps.responses.mapping import TARGETS
from apps.responses.models import ControlResult, Evaluand, FreshSession


class SessionGuaranteeForm(forms.Form):
    """OPB-01 §6.3: whether the surface can guarantee a fresh session; recorded once."""

    fresh_session = forms.ChoiceField(
        choices=FreshSession.choices,
        widget=forms.RadioSelect,
        label="Fresh session guaranteed?",
        help_text="Persistent memory or search history leave order effects uncontrolled.",
    )
    note = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        required=False,
        help_text="How you know: the surface's documentation, a setting, a test.",
    )


class EvaluandForm(forms.Form):
    """Seed 001's identity tuple. Text is kept exactly as typed: a changed space is a change."""

    label = forms.CharField(max_length=200, help_text="A name for people; not part of identity.")
    model = forms.CharField(max_length=200, help_text="Model identifier and snapshot.")
    provider = forms.CharField(max_length=200, required=False)
    safeguards = JSONField(
        required=False, help_text='Provider safeguard settings, as JSON: {"moderation": "on"}.'
    )
    inference_settings = JSONField(
        required=False, help_text='Decoding settings, as JSON: {"temperature": 0}.'
    )
    harness_version = forms.CharField(max_length=200, required=False, strip=False)
    system_prompt = forms.CharField(required=False, strip=False, widget=forms.Textarea)
    observation_projection = forms.CharField(required=False, strip=False, widget=forms.Textarea)
    toolkit = JSONField(required=False, help_text='The action schema, as a JSON list: ["search"].')
    memory_policy = forms.CharField(max_length=200, required=False, strip=False)
    budgets = JSONField(
        required=False, help_text='Turn, token and time budgets, as JSON: {"max_tokens": 1024}.'
    )
    retry_policy = forms.CharField(max_length=200, required=False, strip=False)


class RosterEnrollForm(forms.Form):
    evaluand = forms.ModelChoiceField(
        queryset=Evaluand.objects.none(), help_text="Register it first if it is new."
    )
    code = forms.CharField(
        max_length=64, help_text="How imports and reports name it, e.g. gpt4 or llama2orig."
    )

    def __init__(self, *args, evaluands, **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ModelChoiceField, self.fields["evaluand"]).queryset = evaluands


FORMAT_CHOICES = [
    ("", "From the file name (.csv, .jsonl, .eval/.json)"),
    ("csv", "CSV"),
    ("jsonl", "JSON Lines"),
    ("inspect", "Inspect AI log (.eval or .json)"),
]


def upload_size_problem(upload) -> str | None:
    """Why an uploaded response file is too large to read in a request, or None."""
    limit = settings.RESPONSE_UPLOAD_MAX_MB
    if upload.size <= limit * 1024 * 1024:
        return None
    return (
        f"The file is {upload.size / 1024 / 1024:.0f} MB; uploads take at most {limit} MB. "
        "Import a larger file with `python manage.py import_responses`, or split it."
    )


class ImportUploadForm(forms.Form):
    """The upload form. After a refused import the file is kept on the server (browsers cannot
    re-fill a file input): ``kept_sha256`` and ``kept_filename`` name it, and a re-submission
    without a new file imports the kept one."""

    file = forms.FileField(required=False, help_text="Leave empty to re-submit the kept file.")
    kept_sha256 = forms.RegexField(
        regex=r"^[0-9a-f]{64}$", required=False, widget=forms.HiddenInput
    )
    kept_filename = forms.CharField(max_length=255, required=False, widget=forms.HiddenInput)
    format = forms.ChoiceField(choices=FORMAT_CHOICES, required=False)
    evaluand = forms.ChoiceField(
        required=False,
        label="Every record is from",
        help_text="For a file from one evaluand that has no evaluand column.",
    )
    mapping = JSONField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text="Targets → columns, as JSON; empty means same-named columns. Targets: "
        + ", ".join(TARGETS)
        + ". The import formats page (linked above) lists every target.",
    )
    note = forms.CharField(
        required=False, max_length=500, help_text="Why this file is imported (for reruns, say)."
    )

    def __init__(self, *args, roster_codes, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["evaluand"].choices = [("", "(named by the file)")] + [
            (code, code) for code in roster_codes
        ]

    def clean(self):
        cleaned = super().clean()
        upload = cleaned.get("file")
        kept = cleaned.get("kept_sha256") and cleaned.get("kept_filename")
        if upload is None and not kept and "file" not in self.errors:
            self.add_error("file", "Choose a file.")
        if upload is not None and (problem := upload_size_problem(upload)):
            self.add_error("file", problem)
        name = upload.name if upload is not None else cleaned.get("kept_filename") or ""
        if (upload is not None or kept) and not cleaned.get("format") and not guess_format(name):
            self.add_error("format", "Say which format this file is.")
        mapping = cleaned.get("mapping")
        if mapping is not None and not isinstance(mapping, dict):
            self.add_error("mapping", "The mapping is a JSON object from targets to columns.")
        return cleaned

    def import_mapping(self) -> dict:
        """The mapping typed, with the chosen evaluand as a constant when one was chosen."""
        mapping = dict(self.cleaned_data.get("mapping") or {})
        if self.cleaned_data.get("evaluand"):
            mapping["evaluand"] = {"const": self.cleaned_data["evaluand"]}
        return mapping


class ImportConfirmForm(forms.Form):
    sha256 = forms.RegexField(regex=r"^[0-9a-f]{64}$", widget=forms.HiddenInput)
    filename = forms.CharField(max_length=255, widget=forms.HiddenInput)
    format = forms.CharField(max_length=16, widget=forms.HiddenInput)
    mapping = forms.CharField(required=False, widget=forms.HiddenInput)
    note = forms.CharField(required=False, max_length=500, widget=forms.HiddenInput)

    def clean_mapping(self):
        text = self.cleaned_data["mapping"]
        if not text:
            return None
        try:
            return json_loads(text)
        except (ValueError, RecursionError) as error:
            raise forms.ValidationError("The mapping is not JSON.") from error


class ExclusionForm(forms.Form):
    reason_code = forms.ChoiceField(label="Reason")
    rationale = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}))

    def __init__(self, *args, reasons: dict[str, str], **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["reason_code"]).choices = [
            (code, f"{code} — {description}") for code, description in reasons.items()
        ]


class ControlValidationForm(forms.Form):
    environment = forms.CharField(
        label="Execution environment",
        max_length=200,
        help_text="As the episode files name it in their environment column.",
    )
    result = forms.ChoiceField(
        choices=ControlResult.choices,
        help_text="Inconclusive is never counted as a pass (CRUCIBLE §7).",
    )
    rationale = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}))
