"""Forms of the raters' pages."""

from django import forms


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
