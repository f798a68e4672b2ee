"""What a report leads with (issue #37 §6): the finding(s), "Contradictory", or "Not evaluable:
<why>", read from a result document. The report page, the public run page and the check before
a run on thin data (``apps.analysis.computability.data_shortfall``) all read it here."""

from __future__ import annotations

from typing import Any

from apps.analysis.pipelines import get_pipeline
from apps.protocols.models import ProtocolVersion


def report_headline(document: dict[str, Any], version: ProtocolVersion) -> dict[str, Any]:
    """The answer a report leads with (issue #37 §6): ``{"title", "entries"}``, where ``title``
    is the report's first heading — the finding(s), "Contradictory", or "Not evaluable: <why>"
    — and each entry ``{"where", "findings", "contradictions", "evaluated", "why"}`` is one
    decision stage of the result (any pipeline's stage with ``"stage": "decision"``, found
    wherever it sits). A result with no decision stage is answered by the plan's primary
    estimates (the pipeline's ``estimates_of``): their values, or why none was computed."""
    entries = _decision_stages(document.get("estimates") or {})
    if not entries:
        entries = _primary_estimates(document, version)
    return {"title": _headline_title(entries), "entries": entries}


def decision_stages(estimates: Any) -> list[dict[str, Any]]:
    """Every decision stage of a result's estimates, answered: ``{"where", "findings",
    "contradictions", "evaluated", "why"}`` (what ``report_headline`` reads; the design
    diagnosis counts them over simulations)."""
    return _decision_stages(estimates)


def _decision_stages(estimates: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []

    def walk(node: Any, where: str) -> None:
        if isinstance(node, dict):
            if node.get("stage") == "decision":
                found.append({"where": where, **_decision_answer(node)})
                return
            label = node.get("evaluand")
            for value in node.values():
                walk(value, f"evaluand {label}" if label and isinstance(value, list) else where)
        elif isinstance(node, list):
            for value in node:
                walk(value, where)

    walk(estimates, "")
    return found


def _decision_answer(stage: dict[str, Any]) -> dict[str, Any]:
    """One decision stage's answer. A table evaluated with no finding while some of its rules
    could not be evaluated (their estimates missing) is not evaluable, with those rules'
    reasons: "no rule matched" is said only when every rule could be read."""
    findings = stage.get("findings") or []
    evaluated = bool(stage.get("evaluated"))
    why = stage.get("note") or stage.get("reason") or stage.get("error") or ""
    unread = [r for r in stage.get("rules") or [] if not r.get("evaluable", True)]
    if evaluated and not findings and unread:
        evaluated = False
        why = "; ".join(
            dict.fromkeys(
                reason
                for rule in unread
                for reason in rule.get("not_evaluable")
                or [f"rule {rule.get('rule_id')} lacks {', '.join(rule.get('missing') or [])}"]
            )
        )
    return {
        "findings": findings,
        "contradictions": [c.get("message", "") for c in stage.get("contradictions") or []],
        "evaluated": evaluated,
        "why": why or "the estimates the decision table needs were not produced",
    }


def _primary_estimates(document: dict[str, Any], version: ProtocolVersion) -> list[dict[str, Any]]:
    try:
        pipeline = get_pipeline(document["kind"])
    except KeyError:
        pipeline = None
    declaration = pipeline.declaration if pipeline is not None else None
    if pipeline is None or pipeline.estimates_of is None or declaration is None:
        return [_not_evaluable("the result's pipeline states no finding")]
    try:
        values = pipeline.estimates_of(document.get("estimates") or {})
    except (KeyError, TypeError, ValueError):  # a result of an older shape: no 500 over it
        return [_not_evaluable("the result's estimates could not be read by its pipeline")]
    findings, reasons = [], []
    for spec in declaration.version_estimates(version):
        if not spec.primary:
            continue
        for value in values.get(spec.name) or []:
            if value.value is None:
                reasons.append(f"{spec.name}: {value.reason}")
                continue
            shown = f"{value.value:.3f}" if isinstance(value.value, float) else f"{value.value}"
            surface = f" ({value.surface})" if value.surface else ""
            findings.append(f"{spec.meaning.rstrip('.')}{surface}: {shown}")
    if not findings:
        counts = (document.get("estimates") or {}).get("counts") or {}
        if not reasons and counts.get("analysed") == 0:
            reasons = ["no response has a final score yet"]
        return [_not_evaluable("; ".join(reasons) or "no primary estimate was computed")]
    return [{"where": "", "findings": findings, "contradictions": [], "evaluated": True, "why": ""}]


def _not_evaluable(why: str) -> dict[str, Any]:
    return {"where": "", "findings": [], "contradictions": [], "evaluated": False, "why": why}


def _headline_title(entries: list[dict[str, Any]]) -> str:
    if any(e["evaluated"] and e["contradictions"] for e in entries):
        return "Contradictory" if len(entries) == 1 else "Findings (some contradictory)"
    if all(not e["evaluated"] for e in entries):
        reasons = list(dict.fromkeys(e["why"] for e in entries))
        return "Not evaluable: " + "; ".join(reasons)
    if len(entries) == 1:
        findings = entries[0]["findings"]
        if len(findings) == 1:
            return f"Finding: {findings[0]}"
        return "Findings" if findings else "Finding: no rule of the decision table matched"
    return "Findings"
