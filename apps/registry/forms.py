"""The registry's forms: the index's search and the PI's publish and view-only link forms."""

from django import forms

from apps.protocols.plans import plan_template_choices
from apps.registry.selectors import IndexQuery


class IndexSearchForm(forms.Form):
    """The index's search: text in code or title, plan template, first-public day range."""

    q = forms.CharField(required=False, max_length=200, label="Code or title")
    template = forms.ChoiceField(required=False, label="Plan template")
    published_from = forms.DateField(required=False, label="Public from (YYYY-MM-DD)")
    published_to = forms.DateField(required=False, label="Public until (YYYY-MM-DD)")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["template"].choices = [("", "Any"), *plan_template_choices()]

    def clean(self):
        cleaned = super().clean()
        start, end = cleaned.get("published_from"), cleaned.get("published_to")
        if start and end and start > end:
            self.add_error("published_to", "The end of the range comes before its start.")
        return cleaned

    def query(self) -> IndexQuery:
        """The search a valid form asks for."""
        data = self.cleaned_data
        return IndexQuery(
            text=data["q"].strip(),
            template=data["template"],
            published_from=data["published_from"],
            published_to=data["published_to"],
        )


class PublishForm(forms.Form):
    """Publish now (no embargo day) or under an embargo that ends on its day (UTC)."""

    embargo_until = forms.DateField(
        required=False,
        label="Embargo until (YYYY-MM-DD, UTC; empty: public at once)",
        widget=forms.DateInput(attrs={"type": "date"}),
    )
    authors = forms.CharField(
        required=False,
        max_length=300,
        label="Authors as they are to be named (comma-separated)",
    )


class ViewLinkForm(forms.Form):
    """A view-only link to one version, optionally anonymised."""

    anonymised = forms.BooleanField(
        required=False, label="Anonymised: no PI or institution names on the pages it opens"
    )
    note = forms.CharField(required=False, max_length=200, label="Who it is for (private note)")
