"""A service's refusal lands on the form where it belongs, whatever its shape."""

from django import forms
from django.core.exceptions import ValidationError

from apps.core.forms import add_service_errors


class _Form(forms.Form):
    code = forms.CharField(required=False)
    title = forms.CharField(required=False)


def _bound() -> _Form:
    form = _Form({"code": "X", "title": "T"})
    assert form.is_valid()
    return form


def test_keyed_messages_go_to_their_fields_and_unknown_keys_to_the_form():
    form = _bound()
    add_service_errors(form, ValidationError({"code": "is taken", "owner": "is not a PI"}))
    assert form.errors["code"] == ["is taken"]
    assert form.non_field_errors() == ["is not a PI"]


def test_an_error_without_keys_is_a_form_error_not_a_server_error():
    form = _bound()
    add_service_errors(form, ValidationError(["the version is frozen", "and withdrawn"]))
    assert form.non_field_errors() == ["the version is frozen", "and withdrawn"]


def test_a_mapping_names_the_field_and_a_name_the_form_lacks_falls_back_to_the_form():
    form = _bound()
    error = ValidationError({"sections.title": "is empty", "parameters.eps": "is not a number"})
    add_service_errors(form, error, lambda key: key.partition(".")[2])
    assert form.errors["title"] == ["is empty"]
    assert form.non_field_errors() == ["is not a number"]
