from typing import Any, cast

from django import forms

from apps.analysis.pipelines import get_pipeline, pipeline_kinds


class RunRequestForm(forms.Form):
    """Start a run of the frozen plan with the pipeline it names; a rerun may say why."""

    kind = forms.ChoiceField(
        label="Analysis",
        help_text="The pipeline the frozen plan names; no other can run on it.",
    )
    reason = forms.CharField(
        label="Reason for a rerun",
        required=False,
        max_length=1000,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Written to the deviation log when this reruns an earlier run.",
    )

    below_minimum = forms.BooleanField(
        label="Run below the plan's minimum data",
        required=False,
        widget=forms.HiddenInput,
        help_text="Set by the confirmation that follows a request on data too thin for the plan.",
    )

    def __init__(self, *args: Any, default_kind: str | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        # Only the plan's own pipeline is offered (issue #12 §2).
        kinds = [default_kind] if default_kind in pipeline_kinds() else []
        # self.fields is typed as plain Fields; "kind" is the ChoiceField declared above.
        kind = cast(forms.ChoiceField, self.fields["kind"])
        kind.choices = [(k, f"{k} — {get_pipeline(k).title}") for k in kinds]
        if default_kind:
            self.fields["kind"].initial = default_kind
            # Another pipeline is refused with the plan's own word, as the API refuses it.
            self.fields["kind"].error_messages["invalid_choice"] = (
                f"The frozen plan names the {default_kind} pipeline; only {default_kind} can be "
                "run on it, not %(value)s."
            )
