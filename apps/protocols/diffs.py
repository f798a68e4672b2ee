"""Diffs between two versions of a protocol: section by section, parameter by parameter.

Both sides are compared as canonical documents: a frozen version's stored blob (exactly what was
registered), a draft's document built now. Text is compared word by word with difflib; the
result is plain data (the JSON API returns it as is) and ``ops_html`` renders a section's changes
inline with ``<del>``/``<ins>`` for the page.
"""

import difflib
import json
import re
from typing import Any

from django.utils.html import escape

from apps.protocols.components import RESERVED_NAMES
from apps.protocols.documents import document_pipeline, version_document
from apps.protocols.models import SECTION_FIELDS, Blob, ProtocolVersion
from apps.protocols.plans import SECTION_TITLES

# Words, runs of whitespace and single punctuation marks: a changed number or symbol (ε, 0.05)
# shows as itself, not as the whole line around it.
_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")


def text_ops(old: str, new: str) -> list[dict[str, str]]:
    """The word-level edit script turning ``old`` into ``new``.

    A list of ``{"op": "equal"|"delete"|"insert"|"replace", "old": …, "new": …}`` whose
    ``old`` parts concatenate to ``old`` and ``new`` parts to ``new``.
    """
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    return [
        {"op": tag, "old": "".join(a[i1:i2]), "new": "".join(b[j1:j2])}
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
    ]


def ops_html(ops: list[dict[str, str]]) -> str:
    """``ops`` as escaped HTML with deletions in ``<del>`` and insertions in ``<ins>``."""
    parts = []
    for op in ops:
        if op["op"] == "equal":
            parts.append(escape(op["old"]))
            continue
        if op["old"]:
            parts.append(f"<del>{escape(op['old'])}</del>")
        if op["new"]:
            parts.append(f"<ins>{escape(op['new'])}</ins>")
    return "".join(parts)


def _text_change(old: str, new: str) -> dict[str, Any]:
    if old == new:
        return {"status": "unchanged"}
    status = "added" if not old else "removed" if not new else "changed"
    return {"status": status, "ops": text_ops(old, new)}


def _parameter_change(name: str, old: dict | None, new: dict | None) -> dict[str, Any]:
    if old is None or new is None:
        side = new if old is None else old
        return {
            "name": name,
            "label": side["label"],
            "status": "added" if old is None else "removed",
            "from": None if old is None else old["value"],
            "to": None if new is None else new["value"],
            "unit": side["unit"],
            "changes": {},
        }
    changes = {
        key: [old.get(key), new.get(key)]
        for key in sorted(set(old) | set(new))
        if key not in ("value", "position") and old.get(key) != new.get(key)
    }
    if old["value"] == new["value"]:
        status = "changed" if changes else "unchanged"
    elif not old["value"]:
        status = "instantiated"
    elif not new["value"]:
        status = "cleared"
    else:
        status = "changed"
    return {
        "name": name,
        "label": new["label"],
        "status": status,
        "from": old["value"],
        "to": new["value"],
        "unit": new["unit"],
        "changes": changes,
    }


def _table_change(old: list, new: list) -> dict[str, Any]:
    if old == new:
        return {"status": "unchanged", "rows": []}
    old_rows = {row.get("id"): row for row in old if isinstance(row, dict)}
    new_rows = {row.get("id"): row for row in new if isinstance(row, dict)}
    rows = []
    for rule_id in list(new_rows) + [i for i in old_rows if i not in new_rows]:
        before, after = old_rows.get(rule_id), new_rows.get(rule_id)
        if before == after:
            continue
        status = "added" if before is None else "removed" if after is None else "changed"
        rows.append({"id": rule_id, "status": status, "from": before, "to": after})
    return {"status": "changed", "rows": rows}


def _pipeline_change(old: str | None, new: str | None) -> dict[str, Any]:
    return {"status": "unchanged" if old == new else "changed", "from": old, "to": new}


def _component_change(name: str, old: Any, new: Any) -> dict[str, Any]:
    if old == new:
        return {"name": name, "status": "unchanged"}
    before = json.dumps(old, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    after = json.dumps(new, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    unified = list(difflib.unified_diff(before, after, "from", "to", lineterm="", n=2))
    return {"name": name, "status": "changed", "unified": unified}


def version_as_registered(*, version: ProtocolVersion) -> dict[str, Any]:
    """The document of ``version``: its stored blob when frozen, built from its rows if a draft."""
    if version.sha256:
        blob = Blob.objects.filter(sha256=version.sha256).first()
        if blob is not None:
            return json.loads(bytes(blob.content).decode("utf-8"))
    return version_document(version=version)


def version_diff(*, old: ProtocolVersion, new: ProtocolVersion) -> dict[str, Any]:
    """What changed from ``old`` to ``new`` (two versions of one protocol), as plain data:
    sections (word-level ops), parameters (instantiated / changed / cleared / added / removed /
    unchanged, old → new), the plan's pipeline, the amendment rationale, the decision table's
    rules and every component's document."""
    a, b = version_as_registered(version=old), version_as_registered(version=new)
    names = list(b["parameters"]) + [n for n in a["parameters"] if n not in b["parameters"]]
    names.sort(key=lambda n: (b["parameters"].get(n) or a["parameters"][n]).get("position", 0))
    components = sorted((set(a) | set(b)) - RESERVED_NAMES)

    def side(version: ProtocolVersion) -> dict[str, Any]:
        return {"version": version.label, "status": version.status, "sha256": version.sha256}

    return {
        "protocol": new.protocol.code,
        "from": side(old),
        "to": side(new),
        "sections": [
            {
                "name": name,
                "title": SECTION_TITLES[name],
                **_text_change(a["sections"].get(name, ""), b["sections"].get(name, "")),
            }
            for name in SECTION_FIELDS
        ],
        "parameters": [
            _parameter_change(name, a["parameters"].get(name), b["parameters"].get(name))
            for name in names
        ],
        "pipeline": _pipeline_change(document_pipeline(a), document_pipeline(b)),
        "amendment_rationale": _text_change(a["amendment_rationale"], b["amendment_rationale"]),
        "decision_table": _table_change(a["decision_table"], b["decision_table"]),
        "components": [_component_change(n, a.get(n), b.get(n)) for n in components],
    }
