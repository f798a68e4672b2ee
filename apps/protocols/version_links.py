"""A button from a version's page to a later app's page of that version, shown only to the roles
that may open it and only for frozen versions (``{% analysis_link %}``, ``{% scoring_link %}``),
so that a page can include it without knowing the later app's access rule."""

from collections.abc import Iterable
from typing import Any

from django.urls import reverse
from django.utils.html import format_html

from apps.accounts.selectors import roles_for
from apps.protocols.models import ProtocolVersion


def version_button(
    context: Any, version: ProtocolVersion, *, roles: Iterable[str], url_name: str, text: str
) -> str:
    """``<a class="button secondary">text</a>`` to ``url_name`` (by protocol code and version
    label) when the request's user holds one of ``roles`` and ``version`` is frozen; else ""."""
    request = context.get("request")
    if request is None or version.is_draft:
        return ""
    if not roles_for(user=request.user, protocol_id=version.protocol_id) & set(roles):
        return ""
    url = reverse(url_name, kwargs={"code": version.protocol.code, "label": version.label})
    return format_html('<a class="button secondary" href="{}">{}</a>', url, text)
