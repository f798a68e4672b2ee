"""Form helpers shared by every app's views."""

from __future__ import annotations

from collections.abc import Callable

from django import forms
from django.core.exceptions import ValidationError


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
