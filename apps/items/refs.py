"""The deviation log's ``item`` refs, and where they lead (registered in
``ItemsConfig.ready()``)."""

from collections.abc import Mapping
from typing import Any

from django.urls import reverse

from apps.items.models import Item


def item_ref(item: Item) -> dict[str, Any]:
    """``{"type": "item", "id", "label": the item's code}``."""
    return {"type": "item", "id": item.pk, "label": item.code}


def item_url(ref: Mapping[str, Any], version: tuple[str, str] | None) -> str | None:
    """The item's design page: the entry's version and the ref's label (the item's code)."""
    if version is None:
        return None
    code, label = version
    return reverse(
        "items:item", kwargs={"protocol_code": code, "label": label, "code": str(ref["label"])}
    )
