"""Form helpers shared by every app's views."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django import forms
from django.core.exceptions import ValidationError
from django.http import HttpRequest

from apps.core.inputs import json_problem

T = TypeVar("T")


def add_service_errors(
    form: forms.BaseForm,
    error: ValidationError,
    field_name: Callable[[str], str | None] | None = None,
) -> None:
    """Put a service's ``ValidationError`` on ``form`` so the page shows it where it belongs.

    Each message of an error keyed by field goes under the form field ``field_name(key)``
    names (by default the key itself when the form has such a field); any other key, and an
    error with no keys at all, becomes a non-field error. Both shapes a service may raise are
    handled, so a view never turns a refusal into a server error.
    """
    if not hasattr(error, "error_dict"):
        form.add_error(None, error.messages)
        return
    for key, messages in error.message_dict.items():
        name = field_name(key) if field_name else key
        form.add_error(name if name in form.fields else None, messages)


def service_on_post(request: HttpRequest, form: forms.BaseForm, act: Callable[[], T]) -> T | None:
    """What ``act()`` (a service call) returns, on a POST whose ``form`` is valid; None on a GET,
    an invalid form, or a service refusal, which ``add_service_errors`` puts on the form."""
    if request.method != "POST" or not form.is_valid():
        return None
    try:
        return act()
    except ValidationError as error:
        add_service_errors(form, error)
        return None


class JSONField(forms.JSONField):
    """Django's JSONField, refusing (never crashing on) JSON nested deeper or larger than
    ``apps.core.inputs`` allows, holding a NUL or a lone surrogate (the message names the path
    inside the value), or a number longer than Python reads; an empty field starts empty (Django
    would show the text "null"). Every form's JSON field is this one."""

    def to_python(self, value):
        try:
            parsed = super().to_python(value)
        except RecursionError:
            raise ValidationError("This is not JSON: it nests too deeply.", code="invalid") from (
                None
            )
        except ValueError:  # a number of more digits than int() reads
            raise ValidationError(
                "This is not JSON: a number is longer than Python reads.", code="invalid"
            ) from None
        found = json_problem(parsed)
        if found is not None:
            where, problem = found
            raise ValidationError(f"{where}: {problem}" if where else problem, code="invalid")
        return parsed

    def prepare_value(self, value):
        if value is None:
            return ""
        return super().prepare_value(value)

    def bound_data(self, data, initial):
        try:
            return super().bound_data(data, initial)
        except (ValueError, RecursionError):
            return forms.fields.InvalidJSONInput(data)
