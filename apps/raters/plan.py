"""The analysis-plan parameters blind rating reads, with the defaults used when a plan lacks one.

Parameters are ``AnalysisParameter`` rows (name and value as text) of the version. A value that is
absent, empty or unreadable falls back to the documented default below, so a plan template that
does not carry a parameter still gives a working queue.

| parameter | meaning | default |
|---|---|---|
| ``scores_per_response`` | k, independent primary scores per response | 2 |
| ``adjudication_delta`` | δ: a ``delta`` field disagrees when the scores differ by more | 0.1 |
| ``reservation_minutes`` | how long a reservation holds before it returns to the pool | 30 |
| ``seed`` | fixes each reviewer's presentation order | from the version's hash |
| ``agreement_minimum`` | the minimum α (also read as ``reliability_minimum``) | 0.667 |
| ``audit_count`` | machine-scored responses reviewers also score (a number) | none |
| ``audit_fraction`` | the same as a share of the responses, in (0, 1] | none |
| ``audit_strata`` | a stratified audit's strata and fractions (``raters.audit_strata``) | none |
| ``drift_epsilon`` | seed 003's frozen drift tolerance ε, in [0, 1) | none (refused) |

The default minimum is Krippendorff's (2004) lowest acceptable α for tentative conclusions.
"""

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from apps.protocols.models import ProtocolVersion
from apps.raters.audit_strata import AuditStrata, audit_strata_read

DEFAULT_K = 2
DEFAULT_DELTA = Decimal("0.1")
DEFAULT_RESERVATION_MINUTES = 30
DEFAULT_MINIMUM = Decimal("0.667")
MINIMUM_NAMES = ("agreement_minimum", "reliability_minimum", "alpha_minimum")


@dataclass(frozen=True)
class RatingPlan:
    k: int
    delta: Decimal
    reservation_minutes: int
    seed: int
    minimum: Decimal
    audit_count: int | None = None
    audit_fraction: Decimal | None = None
    drift_epsilon: Decimal | None = None
    audit_strata: AuditStrata | None = None


def _decimal(value: str | None) -> Decimal | None:
    if value is None or not value.strip():
        return None
    try:
        number = Decimal(value.strip())
    except InvalidOperation:
        return None
    return number if number.is_finite() else None


def _default_seed(version: ProtocolVersion) -> int:
    if version.sha256:
        return int(version.sha256[:15], 16)
    return version.pk


def rating_plan(version: ProtocolVersion) -> RatingPlan:
    """The rating parameters of ``version``'s plan, each with its default when absent."""
    values = dict(version.parameters.values_list("name", "value"))
    k = _decimal(values.get("scores_per_response"))
    delta = _decimal(values.get("adjudication_delta"))
    minutes = _decimal(values.get("reservation_minutes"))
    seed = _decimal(values.get("seed"))
    audit_count = _decimal(values.get("audit_count"))
    audit_fraction = _decimal(values.get("audit_fraction"))
    drift_epsilon = _decimal(values.get("drift_epsilon"))
    minimum = next(
        (m for m in (_decimal(values.get(name)) for name in MINIMUM_NAMES) if m is not None), None
    )
    return RatingPlan(
        k=int(k) if k is not None and k >= 1 else DEFAULT_K,
        delta=delta if delta is not None and delta >= 0 else DEFAULT_DELTA,
        reservation_minutes=int(minutes)
        if minutes is not None and minutes >= 1
        else (DEFAULT_RESERVATION_MINUTES),
        seed=int(seed) if seed is not None else _default_seed(version),
        minimum=minimum if minimum is not None else DEFAULT_MINIMUM,
        audit_count=int(audit_count) if audit_count is not None and audit_count >= 0 else None,
        audit_fraction=audit_fraction
        if audit_fraction is not None and 0 < audit_fraction <= 1
        else None,
        drift_epsilon=drift_epsilon
        if drift_epsilon is not None and 0 <= drift_epsilon < 1
        else None,
        audit_strata=audit_strata_read(
            values.get("audit_strata"),
            float(audit_fraction) if audit_fraction is not None and audit_fraction > 0 else None,
        ),
    )
