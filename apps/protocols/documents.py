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
from apps.protocols.plans import template_pipeline

# The document's type names its revision. Revision 2 (issue #33) adds the frozen columns
# revision 1 left out: a parameter's help text, the rubric text's media type, a cell's expected
# output even without a kind. A version is always rebuilt with the revision its stored blob
# names (``document_revision``), so every document frozen as revision 1 keeps its bytes and
# hash; new freezes write revision 2. Revision 2 is revision 1 plus additions: the revision-1
# builder is kept whole, and each component may add to its part (``VersionComponent.revise``).
DOCUMENT_TYPES = {1: "preregistry/protocol-version/1", 2: "preregistry/protocol-version/2"}
CURRENT_REVISION = 2
DOCUMENT_TYPE = DOCUMENT_TYPES[CURRENT_REVISION]


def document_revision(content: bytes) -> int | None:
    """The revision a stored canonical document names (``"document"``), or None for bytes that
    are not a protocol-version document of a known revision."""
    import json

    try:
        kind = json.loads(content).get("document")
    except (ValueError, AttributeError, RecursionError):
        return None
    return next((revision for revision, name in DOCUMENT_TYPES.items() if name == kind), None)


def _parameter(parameter, revision: int) -> dict[str, Any]:
    out = {
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
    # Only json parameters have a schema; leaving the key out otherwise keeps the documents of
    # plans without one exactly as they were before parameters could carry a schema.
    if parameter.schema is not None:
        out["schema"] = parameter.schema
    if revision >= 2:
        out["help_text"] = parameter.help_text
    return out


def version_document(
    *, version: ProtocolVersion, revision: int = CURRENT_REVISION
) -> dict[str, Any]:
    """The canonical document of ``version`` as a Python value (see the module docstring), in
    ``revision`` (``DOCUMENT_TYPES``; the current one unless rebuilding a stored document).
    Raises KeyError for an unknown revision."""
    protocol = version.protocol
    predecessor = version.supersedes
    document: dict[str, Any] = {
        "document": DOCUMENT_TYPES[revision],
        "protocol": {"code": protocol.code, "title": protocol.title, "template": protocol.template},
        "version": version.label,
        "sections": {name: getattr(version, name) for name in SECTION_FIELDS},
        "parameters": {
            p.name: _parameter(p, revision) for p in version.parameters.order_by("name")
        },
        "decision_table": version.decision_table,
        "supersedes": (
            None
            if predecessor is None
            else {"version": predecessor.label, "sha256": predecessor.sha256 or None}
        ),
        "amendment_rationale": version.amendment_rationale,
    }
    # The plan's pipeline is written when the template does not already name it (a generic
    # plan, or one that chose another pipeline); a preset's pipeline never changes, so the
    # template names it for every other document, and those keep the bytes they had before
    # plans named their pipeline.
    if version.pipeline and version.pipeline != template_pipeline(protocol.template):
        document["pipeline"] = version.pipeline
    for component in registered_components():
        if component.document is not None:
            value = component.document(version)
            if revision >= 2 and component.revise is not None:
                value = component.revise(version, value)
            if value is None and component.omit_empty_document:
                continue
            document[component.name] = value
    return document


def document_pipeline(document: dict[str, Any]) -> str | None:
    """The pipeline a canonical document's plan names (its own key, else its template's)."""
    return document.get("pipeline") or template_pipeline(document["protocol"]["template"])


def version_document_bytes(
    *, version: ProtocolVersion, revision: int = CURRENT_REVISION
) -> tuple[bytes, str]:
    """The canonical bytes of ``version``'s document (in ``revision``) and their SHA-256."""
    content = canonical_json(version_document(version=version, revision=revision))
    return content, sha256_hex(content)
