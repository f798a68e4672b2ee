"""How the deviation log refers to a protocol version and a stored blob, and where those refs lead.

``version_ref`` is the one way every app writes a version into a log entry's ``refs``. The
resolvers are registered with ``apps.deviations.refs`` from ``ProtocolsConfig.ready()``.
"""

from collections.abc import Mapping
from typing import Any

from django.urls import reverse

from apps.protocols.models import ProtocolVersion


def version_ref(version: ProtocolVersion) -> dict[str, Any]:
    """The log reference to ``version``: ``{"type": "version", "id", "label": "OPB-01 v1.1"}``,
    with ``sha256`` once the version is frozen (so the entry names the exact text)."""
    ref: dict[str, Any] = {
        "type": "version",
        "id": version.pk,
        "label": f"{version.protocol.code} v{version.label}",
    }
    if version.sha256:
        ref["sha256"] = version.sha256
    return ref


def version_of_label(label: str) -> tuple[str, str] | None:
    """``("OPB-01", "1.1")`` from a version ref's label ``"OPB-01 v1.1"``; None if it has no
    such shape. Protocol codes may contain `` v`` only before the last one."""
    code, separator, version_label = label.rpartition(" v")
    if not separator or not code or not version_label:
        return None
    return code, version_label


def version_url(ref: Mapping[str, Any], version: tuple[str, str] | None) -> str | None:
    """The version's page, from the ref's own label (no database lookup)."""
    own = version_of_label(str(ref.get("label", "")))
    if own is None:
        return None
    code, label = own
    return reverse("protocols:version", kwargs={"code": code, "label": label})


def blob_url(ref: Mapping[str, Any], version: tuple[str, str] | None) -> str:
    """The stored blob, by its SHA-256 (the ref's id)."""
    return reverse("protocols-api:blob", kwargs={"digest": str(ref["id"])})
