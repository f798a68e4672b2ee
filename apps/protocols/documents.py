"""A version's canonical document: what a freeze hashes, stores as a blob and serves forever.

The document holds everything the version contains, by natural keys only: the protocol's code,
title and plan template, the version label, the six sections, every parameter by name, the
decision table, the version it supersedes (label and hash), the amendment rationale, and every
registered ``VersionComponent``'s ``document(version)`` under the component's name. It holds no
database ids, no clock times and no usernames, so the same steps give the same bytes and the same
SHA-256 on any database (the freeze's time and author are on the version row and in the
deviation log, whose entry names this hash).

Encoded by ``apps.core.canonical.canonical_json``: sorted keys, UTF-8, no insignificant
whitespace. Parameter values and bounds are decimal text, never floats.
"""

from typing import Any

from apps.core.canonical import canonical_json, sha256_hex
from apps.protocols.components import registered_components
from apps.protocols.models import SECTION_FIELDS, ProtocolVersion
from apps.protocols.parameters import decimal_text

DOCUMENT_TYPE = "preregistry/protocol-version/1"


def _parameter(parameter) -> dict[str, Any]:
    return {
        "label": parameter.label,
        "kind": parameter.kind,
        "value": parameter.value,
        "unit": parameter.unit,
        "required": parameter.required,
        "choices": list(parameter.choices),
        "minimum": decimal_text(parameter.minimum),
        "maximum": decimal_text(parameter.maximum),
        "position": parameter.position,
    }


def version_document(*, version: ProtocolVersion) -> dict[str, Any]:
    """The canonical document of ``version`` as a Python value (see the module docstring)."""
    protocol = version.protocol
    predecessor = version.supersedes
    document: dict[str, Any] = {
        "document": DOCUMENT_TYPE,
        "protocol": {"code": protocol.code, "title": protocol.title, "template": protocol.template},
        "version": version.label,
        "sections": {name: getattr(version, name) for name in SECTION_FIELDS},
        "parameters": {p.name: _parameter(p) for p in version.parameters.order_by("name")},
        "decision_table": version.decision_table,
        "supersedes": (
            None
            if predecessor is None
            else {"version": predecessor.label, "sha256": predecessor.sha256 or None}
        ),
        "amendment_rationale": version.amendment_rationale,
    }
    for component in registered_components():
        if component.document is not None:
            document[component.name] = component.document(version)
    return document


def version_document_bytes(*, version: ProtocolVersion) -> tuple[bytes, str]:
    """The canonical bytes of ``version``'s document and their SHA-256 (lowercase hex)."""
    content = canonical_json(version_document(version=version))
    return content, sha256_hex(content)
