from django import forms


class ProtocolCreateForm(forms.Form):
    code = forms.CharField(max_length=32, help_text="A short code such as OPB-01.")
    title = forms.CharField(max_length=300)
