"""The JSON Schema (Draft 2020-12) shapes the plan parameters' schemas are built of: a closed
object (no property beyond the ones named) and an array of such records.

Plain dicts, in the key order the schemas have always been written in (the parameter catalogue
shows them as written; the frozen document holds them in canonical JSON).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def closed_object(
    properties: dict[str, Any], *, required: Sequence[str] | None = None
) -> dict[str, Any]:
    """An object schema with ``properties`` (name → schema), the ``required`` names (left out
    when None) and no other property allowed."""
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required is not None:
        schema["required"] = list(required)
    schema["additionalProperties"] = False
    return schema


def records(
    properties: dict[str, Any], *, required: Sequence[str], min_items: int | None = None
) -> dict[str, Any]:
    """An array schema whose items are ``closed_object(properties, required=required)``, with at
    least ``min_items`` items when given."""
    schema: dict[str, Any] = {"type": "array"}
    if min_items is not None:
        schema["minItems"] = min_items
    schema["items"] = closed_object(properties, required=required)
    return schema
