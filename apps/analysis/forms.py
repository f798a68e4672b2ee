from django import forms

from apps.analysis.pipelines import pipeline_kinds


class RunRequestForm(forms.Form):
    """Start a run of the frozen plan; a rerun may say why."""

    kind = forms.ChoiceField(
        label="Analysis",
        help_text="The pipeline that computes the plan's estimates.",
    )
    reason = forms.CharField(
        label="Reason for a rerun",
        required=False,
        max_length=1000,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Written to the deviation log when this reruns an earlier run.",
    )

    def __init__(self, *args, default_kind: str | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["kind"].choices = [(k, k) for k in pipeline_kinds() if not k.startswith("_")]
        if default_kind:
            self.fields["kind"].initial = default_kind
