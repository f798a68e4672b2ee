"""Pieces the kinds' pipelines share: the exclusion and coverage parts of the inputs, value
coding, and an estimate's cell in a result document."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from apps.analysis.stats.bootstrap import CoverageReport, coverage
from apps.analysis.stats.bounded_means import BoundedMean
from apps.analysis.stats.comparison import Comparison


def exclusion_records(administrations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The excluded observations, by schedule position, with reason and seal state."""
    return [
        {
            "position": a["position"],
            "item": a["item"],
            "level": a["level"],
            "evaluand": a["evaluand"],
            "reason_code": a["reason_code"],
            "outcome_visible": a["outcome_visible"],
        }
        for a in administrations
        if a["status"] == "excluded"
    ]


def exclusion_summary(exclusions: list[dict[str, Any]]) -> dict[str, Any]:
    by_reason = Counter(e["reason_code"] for e in exclusions)
    return {
        "total": len(exclusions),
        "by_reason": dict(sorted(by_reason.items())),
        "decided_after_outcomes_were_visible": sum(bool(e["outcome_visible"]) for e in exclusions),
    }


def coverage_table(
    planned: list[dict[str, Any]], observed: Counter[Any], keys: tuple[str, ...]
) -> dict[str, Any]:
    """Coverage n/N per cell of ``keys`` (planned administrations vs analysed observations).

    ``planned`` rows carry the ``keys`` and ``N``; ``observed`` counts analysed rows by the same
    key tuple. Unobserved cells are listed, never imputed (CRUCIBLE §9.3).
    """
    plan = {tuple(row[k] for k in keys): row["N"] for row in planned}
    report: CoverageReport[tuple[Any, ...]] = coverage(
        {cell: observed.get(cell, 0) for cell in plan}, plan
    )
    cells = [
        {**dict(zip(keys, c["cell"], strict=True)), **{k: c[k] for k in ("n", "N", "status")}}
        for c in report.to_dict()["cells"]
    ]
    return {
        "keys": list(keys),
        "cells": cells,
        "n_total": report.n_total,
        "N_total": report.N_total,
        "not_observed": [dict(zip(keys, cell, strict=True)) for cell in report.not_observed],
    }


def binary(value: Any) -> int | None:
    """A 0/1 coding from a stored score value (bool, 0/1, "true"/"false", "yes"/"no")."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float) and value in (0, 1):
        return int(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("1", "true", "yes"):
            return 1
        if text in ("0", "false", "no"):
            return 0
    return None


def number(value: Any) -> float | None:
    """A finite number from a stored score value (numbers or numeric text), else None."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if np.isfinite(out) else None


def interval(pair: Sequence[Any] | None) -> list[float] | None:
    return None if pair is None else [float(pair[0]), float(pair[1])]


def estimate_cell(result: Comparison | BoundedMean, *, n: int) -> dict[str, Any]:
    """``result`` (an estimate of ``n`` observations with its interval) as a cell of a result
    document, in the shape a rate's cell has (``stats.proportions.RateInterval.as_cell``), so
    that a report reads a mean's cell and a rate's alike: ``estimate``, ``interval`` ([lower,
    upper] or None), ``n``, ``n_items`` (the clusters), ``interval_method``, and ``note`` when
    there is one."""
    out: dict[str, Any] = {
        "estimate": result.estimate,
        "interval": interval(result.interval),
        "n": n,
        "n_items": result.n_clusters,
        "interval_method": result.method,
    }
    if result.note:
        out["note"] = result.note
    return out
