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
    parts: list[str] = []
    for op in ops:
        if op["op"] == "equal":
            parts.append(escape(op["old"]))
            continue
        if op["old"]:
            parts.append(f"<del>{escape(op['old'])}</del>")
        if op["new"]:
            parts.append(f"<ins>{escape(op['new'])}</ins>")
    return "".join(parts)


_WORD = re.compile(r"\w+")


def _text_change(old: str, new: str) -> dict[str, Any]:
    if old == new:
        return {"status": "unchanged"}
    status = "added" if not old else "removed" if not new else "changed"
    ops = text_ops(old, new)
    return {
        "status": status,
        "ops": ops,
        # How much changed, in words: what the page says before the text itself is opened.
        "words_removed": sum(len(_WORD.findall(op["old"])) for op in ops if op["op"] != "equal"),
        "words_added": sum(len(_WORD.findall(op["new"])) for op in ops if op["op"] != "equal"),
    }


def _parameter_change(name: str, old: dict | None, new: dict | None) -> dict[str, Any]:
    if old is None or new is None:
        side = new if old is None else old
        assert side is not None  # the name comes from one version's parameters or the other's
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


# Keys that name an entry of a list of objects, in the order they are tried: entries are matched
# by the first one every entry on both sides carries (else by position).
_IDENTITY_KEYS = ("id", "code", "name", "key", "label", "position", "ordinal")
# Past this many lines a component's unified diff is not put on the page (JSON download only).
UNIFIED_LINES_SHOWN = 400


def _identity(old: list, new: list) -> str | None:
    for key in _IDENTITY_KEYS:
        sides = []
        for entries in (old, new):
            if not all(isinstance(e, dict) and key in e for e in entries):
                break
            values = [json.dumps(e[key], sort_keys=True) for e in entries]
            if len(set(values)) != len(values):
                break
            sides.append(values)
        if len(sides) == 2 and (old or new):
            return key
    return None


def _as(kind: type, value: Any) -> Any:
    return value if isinstance(value, kind) else kind()


def _list_summary(path: str, old: list, new: list) -> dict[str, Any]:
    key = _identity(old, new)
    before: dict[str | int, Any]  # by identity, or by position
    after: dict[str | int, Any]
    if key is not None:
        before = {json.dumps(e[key], sort_keys=True): e for e in old}
        after = {json.dumps(e[key], sort_keys=True): e for e in new}
    else:  # by position
        before, after = dict(enumerate(old)), dict(enumerate(new))
    common = before.keys() & after.keys()
    counts = {
        "added": len(after.keys() - before.keys()),
        "removed": len(before.keys() - after.keys()),
        "changed": sum(1 for k in common if before[k] != after[k]),
    }
    parts = [f"{n} {word}" for word, n in counts.items() if n]
    text = f"{path}: {len(old)} → {len(new)} entries" + (f"; {', '.join(parts)}" if parts else "")
    return {
        "path": path,
        "kind": "list",
        "from": len(old),
        "to": len(new),
        **counts,
        "matched_by": key or "position",
        "text": text,
    }


def _short(value: Any, limit: int = 80) -> str:
    text = "nothing" if value is None else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def structure_summary(old: Any, new: Any, path: str = "") -> list[dict[str, Any]]:
    """What changed between two JSON values, one line per changed part, however large they are.

    Objects are walked key by key (``path`` joins keys with " › "); a list is not walked but
    counted: ``{"path", "kind": "list", "from": n, "to": m, "added", "removed", "changed",
    "matched_by", "text"}``, e.g. text "responses › schedule: 0 → 920 entries; 920
    added". A list's entries are matched by an identity key they all carry (``id``,
    ``code``, ``name``, …) or else by position. Any other changed value gives ``{"path",
    "kind": "value", "from", "to", "text"}``. Unchanged parts give nothing: equal values give
    ``[]``.
    """
    if old == new:
        return []
    if isinstance(old, dict) and isinstance(new, dict):
        lines = []
        for key in list(old) + [k for k in new if k not in old]:
            sub = f"{path} › {key}" if path else str(key)
            lines += structure_summary(old.get(key), new.get(key), sub)
        return lines
    if isinstance(old, list) or isinstance(new, list):
        return [_list_summary(path, _as(list, old), _as(list, new))]
    if isinstance(old, dict) or isinstance(new, dict):
        # An object appearing or disappearing: walked against an empty one.
        return structure_summary(_as(dict, old), _as(dict, new), path)
    text = f"{path}: {_short(old)} → {_short(new)}"
    return [{"path": path, "kind": "value", "from": old, "to": new, "text": text}]


def _component_change(name: str, old: Any, new: Any) -> dict[str, Any]:
    if old == new:
        return {"name": name, "status": "unchanged"}
    before = json.dumps(old, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    after = json.dumps(new, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    unified = list(difflib.unified_diff(before, after, "from", "to", lineterm="", n=2))
    return {
        "name": name,
        "status": "changed",
        "summary": structure_summary(old, new, name),
        "unified": unified,
    }


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
    rules and every component's document (a ``summary`` of what changed in it, by
    ``structure_summary``, and its ``unified`` diff)."""
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
