"""The strata of a stratified human audit of machine scores, and its Horvitz–Thompson weights
(issue 34 §6).

The plan's ``audit_strata`` parameter (JSON, the schema of ``apps.protocols.plans.AUDIT_STRATA``)
says how responses are split and which fraction of each stratum the reviewers audit:

``by``
    ``value`` (the machine's value of ``field``), ``confidence`` (its confidence, in the bands
    ``bands`` cut: ``[0.5, 0.8]`` gives ``0-0.5``, ``0.5-0.8``, ``0.8-1``; the lowest of the
    response's scores of ``field``, or of all its scores without a field) or ``condition``
    (the item's condition code). A value and a confidence are the response's own, as imported
    (epoch by epoch, whatever the scorer's ``epochs`` rule): the unit judge validation compares
    (``apps.raters.final.comparison_inputs`` says why), so the weights below are the draw's
    inclusion probabilities of the responses compared;
``fractions``
    ``{stratum: fraction in [0, 1]}``; a stratum not named takes ``default_fraction`` (else
    the plan's ``audit_fraction``, else 0). A response with no value, no confidence or no
    condition is in the stratum ``none``; one whose scorers of the field's role disagree, in
    ``mixed``.

The draw (``services.audit.audit_sample_draw``) takes ⌈f_h · N_h⌉ of the N_h responses of each
stratum h, in the order of the keyed hash of the plan's seed (reproducible from the frozen
seed). Each audited response of stratum h then had the inclusion probability π = n_h / N_h
(stratified simple random sampling without replacement; Cochran 1977, *Sampling Techniques*,
§5.1), and the analysis weights it by 1/π where it estimates agreement (Horvitz & Thompson
1952; ``apps.analysis.stats.judge``). The weights are computed at analysis time from the
strata as they are then: when the machine scores a stratum is defined by were all imported
before scoring opened, these are the draw's own probabilities; otherwise the weights
post-stratify the sample (Holt, D. & Smith, T. M. F. 1979, "Post stratification", J. R. Stat.
Soc. A 142(1): 33–46), which docs/machine-scores.md says.
"""

from __future__ import annotations

import itertools
import json
import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from apps.protocols.models import ProtocolVersion
from apps.raters.models import AuditSample, MachineScore, RubricField, ScorerRosterEntry
from apps.responses.models import Exclusion, Response

NONE = "none"
MIXED = "mixed"


@dataclass(frozen=True)
class AuditStrata:
    """A plan's ``audit_strata`` (see the module docstring), read."""

    by: str
    fractions: dict[str, float]
    default_fraction: float
    field: str = ""
    bands: tuple[float, ...] = ()

    def fraction(self, stratum: str) -> float:
        return self.fractions.get(stratum, self.default_fraction)

    def band(self, confidence: float) -> str:
        cuts = (0.0, *sorted(self.bands), 1.0)
        for low, high in itertools.pairwise(cuts):
            if confidence < high or high == 1.0:
                return f"{_text(low)}-{_text(high)}"
        return NONE  # unreachable: the last band ends at 1


def _text(number: float) -> str:
    return f"{number:g}"


def audit_strata_read(text: str | None, fallback_fraction: float | None) -> AuditStrata | None:
    """The plan's ``audit_strata`` value as ``AuditStrata``; None when unset or not a JSON
    object of the schema's shape (the parameter's schema refuses such a value when it is set)."""
    if not text or not text.strip():
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("by") not in ("value", "confidence", "condition"):
        return None
    fractions = data.get("fractions")
    if not isinstance(fractions, dict):
        return None
    default = data.get("default_fraction", fallback_fraction or 0.0)
    return AuditStrata(
        by=data["by"],
        fractions={str(k): float(v) for k, v in fractions.items()},
        default_fraction=float(default),
        field=str(data.get("field", "")),
        bands=tuple(float(b) for b in data.get("bands", ())),
    )


def _value_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)


def response_strata(
    version: ProtocolVersion, strata: AuditStrata, responses: list[int]
) -> dict[int, str]:
    """``{response id: stratum}`` for ``responses`` of ``version`` by ``strata``."""
    if strata.by == "condition":
        codes = dict(
            Response.objects.filter(pk__in=responses).values_list(
                "pk", "attempt__administration__cell__item__condition__code"
            )
        )
        return {pk: codes.get(pk) or NONE for pk in responses}
    scores = MachineScore.objects.filter(version_id=version.pk, response_id__in=responses)
    if strata.field:
        field = RubricField.objects.filter(version=version, name=strata.field).first()
        role = field.scorer_role if field is not None else None
        scorers = ScorerRosterEntry.objects.filter(version=version, role=role)
        scores = scores.filter(field=strata.field, scorer_id__in=scorers.values("scorer_id"))
    found: dict[int, list[Any]] = defaultdict(list)
    if strata.by == "value":
        for pk, value in scores.values_list("response_id", "value"):
            found[pk].append(_value_text(value))
        return {
            pk: NONE if not found[pk] else found[pk][0] if len(set(found[pk])) == 1 else MIXED
            for pk in responses
        }
    for pk, confidence in scores.exclude(confidence=None).values_list("response_id", "confidence"):
        found[pk].append(confidence)
    return {pk: strata.band(min(found[pk])) if found[pk] else NONE for pk in responses}


def audit_candidates(version: ProtocolVersion) -> list[int]:
    """The responses the audit draws from: every response of ``version`` not excluded."""
    return list(
        Response.objects.filter(version_id=version.pk)
        .exclude(pk__in=Exclusion.objects.filter(version=version).values("attempt__response"))
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def stratified_targets(strata: AuditStrata, of: dict[int, str]) -> dict[str, int]:
    """How many responses each stratum's sample holds: ⌈f_h · N_h⌉."""
    sizes: dict[str, int] = defaultdict(int)
    for stratum in of.values():
        sizes[stratum] += 1
    return {h: math.ceil(strata.fraction(h) * n - 1e-9) for h, n in sorted(sizes.items())}


def audit_weights(version: ProtocolVersion, strata: AuditStrata) -> dict[int, dict[str, Any]]:
    """``{response id: {"stratum", "weight"}}`` of each audited response: its stratum h and its
    Horvitz–Thompson weight 1/π = N_h / n_h (responses of the stratum / audited ones)."""
    candidates = audit_candidates(version)
    of = response_strata(version, strata, candidates)
    audited = set(AuditSample.objects.filter(version=version).values_list("response_id", flat=True))
    sizes: dict[str, int] = defaultdict(int)
    drawn: dict[str, int] = defaultdict(int)
    for pk, stratum in of.items():
        sizes[stratum] += 1
        drawn[stratum] += pk in audited
    return {
        pk: {"stratum": of[pk], "weight": sizes[of[pk]] / drawn[of[pk]]}
        for pk in sorted(audited)
        if pk in of
    }
