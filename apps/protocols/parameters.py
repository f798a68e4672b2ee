"""How an analysis-plan parameter's value is checked, by its kind.

Values are stored as the text the PI wrote (surrounding whitespace removed). Numbers must be plain
decimal text (``0.05``, ``-1``, ``10``; no exponent, no thousands separator, no leading zeros), so
the stored text is already canonical and goes into the frozen document unchanged: a parameter's
value is never re-formatted by a float round trip. Every error names the parameter by its label.
"""

import re
from decimal import Decimal, InvalidOperation
from typing import Any
from typing import Protocol as TypingProtocol

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from apps.core.inputs import json_loads
from apps.protocols.models import ParameterKind

# The interval methods the analysis implements (apps/analysis reads these values): the percentile
# bootstrap (clustered by family where the plan's aggregation asks for it) and the analytic
# (model-based Wald) interval. A parameter's own ``choices`` may narrow the list.
INTERVAL_METHODS = ("bootstrap", "analytic")

_DECIMAL = re.compile(r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?$")
_INTEGER = re.compile(r"^-?(0|[1-9][0-9]*)$")


BOOLEAN_VALUES = ("true", "false")


class ParameterLike(TypingProtocol):
    label: str
    kind: str
    choices: list
    minimum: Decimal | None
    maximum: Decimal | None
    schema: dict | None


def decimal_text(value: Decimal | int | float | str | None) -> str | None:
    """A bound as plain decimal text without trailing zeros (``Decimal('5.000')`` → ``'5'``)."""
    if value is None:
        return None
    number = Decimal(str(value)).normalize()
    text = format(number, "f")
    return "0" if text in ("-0", "0") else text


def clean_value(value: str | None) -> str:
    """The text stored for ``value``: surrounding whitespace removed, ``None`` as empty."""
    return (value or "").strip()


def allowed_choices(parameter: ParameterLike) -> list[str]:
    """The values a choice or interval-method parameter accepts."""
    if parameter.kind == ParameterKind.INTERVAL_METHOD:
        return list(parameter.choices) or list(INTERVAL_METHODS)
    return list(parameter.choices)


def value_error(parameter: ParameterLike, value: str) -> str | None:
    """Why ``value`` is not acceptable for ``parameter``, or None when it is (or is empty).

    Emptiness is not an error here: whether an empty value blocks the freeze is the gate's
    question (``param_missing``).
    """
    value = clean_value(value)
    if not value:
        return None
    label = parameter.label
    kind = parameter.kind
    if kind in (ParameterKind.NUMBER, ParameterKind.INTEGER):
        pattern, noun = (
            (_INTEGER, "a whole number such as 5")
            if kind == ParameterKind.INTEGER
            else (_DECIMAL, "a plain decimal number such as 0.05")
        )
        if not pattern.match(value):
            return f"the {label} must be {noun}, not {value!r}"
        try:
            number = Decimal(value)
        except InvalidOperation:  # the pattern should have caught it; keep the message clear
            return f"the {label} must be {noun}, not {value!r}"
        if parameter.minimum is not None and number < parameter.minimum:
            return f"the {label} must be at least {decimal_text(parameter.minimum)}, not {value}"
        if parameter.maximum is not None and number > parameter.maximum:
            return f"the {label} must be at most {decimal_text(parameter.maximum)}, not {value}"
        return None
    if kind in (ParameterKind.CHOICE, ParameterKind.INTERVAL_METHOD):
        options = allowed_choices(parameter)
        if value not in options:
            return f"the {label} must be one of {', '.join(options)}; {value!r} is not"
        return None
    if kind == ParameterKind.TEXT:
        return None
    if kind == ParameterKind.BOOLEAN:
        if value not in BOOLEAN_VALUES:
            return f"the {label} must be true or false, not {value!r}"
        return None
    if kind in (ParameterKind.LIST, ParameterKind.JSON):
        try:
            data = json_loads(value)
        except ValueError as error:
            return f"the {label} must be JSON: {error}"
        if kind == ParameterKind.LIST:
            return _list_error(parameter, data)
        return schema_error(parameter, data)
    return f"the {label} has an unknown kind {kind!r}"


def _list_error(parameter: ParameterLike, data: Any) -> str | None:
    if not isinstance(data, list) or not all(isinstance(item, str) for item in data):
        return f'the {parameter.label} must be a JSON list of texts such as ["a", "b"]'
    options = list(parameter.choices)
    for index, item in enumerate(data):
        if options and item not in options:
            return (
                f"the {parameter.label}[{index}] must be one of {', '.join(options)}; "
                f"{item!r} is not"
            )
    return None


def schema_problem(schema: Any) -> str | None:
    """Why ``schema`` is not a usable JSON Schema (Draft 2020-12), or None."""
    if not isinstance(schema, dict):
        return "a JSON Schema is a JSON object"
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        return f"the JSON Schema is invalid at {_path(error.absolute_path)}: {error.message}"
    return None


def _path(parts: Any) -> str:
    out = "$"
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def schema_error(parameter: ParameterLike, data: Any) -> str | None:
    """The first way ``data`` violates the parameter's JSON Schema, naming its path
    (``$[0].code``), or None when it satisfies it (or the parameter has no schema)."""
    schema = parameter.schema
    if not schema:
        return None
    problem = schema_problem(schema)
    if problem:
        return f"the {parameter.label}: {problem}"
    errors = sorted(
        Draft202012Validator(schema).iter_errors(data),
        key=lambda e: (list(map(str, e.absolute_path)), e.message),
    )
    if not errors:
        return None
    error = errors[0]
    return f"the {parameter.label} at {_path(error.absolute_path)}: {error.message}"


def typed_value(parameter: ParameterLike, value: str) -> Any:
    """The value as the plan means it: Decimal, bool, list or JSON data; text otherwise; None
    when empty. Assumes ``value_error`` found nothing."""
    value = clean_value(value)
    if not value:
        return None
    if parameter.kind in (ParameterKind.NUMBER, ParameterKind.INTEGER):
        return Decimal(value)
    if parameter.kind == ParameterKind.BOOLEAN:
        return value == "true"
    if parameter.kind in (ParameterKind.LIST, ParameterKind.JSON):
        return json_loads(value)
    return value
