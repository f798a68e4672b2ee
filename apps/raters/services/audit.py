"""The human audit sample of machine-scored responses (issue #13's "human audit sample").

Drawn with the plan's seed when scoring opens (``scoring_open`` calls ``audit_sample_draw``); the
sample's responses go to the blind queue as usual, and on their tasks reviewers also score the
fields a scorer scores, so that machine and human values can be compared. Nothing a reviewer
sees says a task belongs to the sample.
"""

from __future__ import annotations

import math

from apps.protocols.models import ProtocolVersion
from apps.raters.audit_strata import audit_candidates, response_strata, stratified_targets
from apps.raters.models import AuditSample, RubricField, ScoredBy
from apps.raters.plan import RatingPlan, rating_plan
from apps.raters.services.queue import keyed_order


def audit_sample_draw(*, version: ProtocolVersion) -> int:
    """Draw the plan's human audit sample of machine-scored responses; the number added.

    Called by ``scoring_open`` inside its transaction. The plan gives ``audit_count`` (a number
    of responses) or ``audit_fraction`` (a share of them, rounded up); with neither nothing is
    drawn. Responses (not excluded) are taken in the order of a keyed hash of the plan's seed
    and the response (``keyed_order(seed, "audit:<id>")``), so the sample is fixed by the seed
    and unrelated to the design's order. Each opening tops the sample up to its target over the
    responses then present; a response once drawn stays drawn.

    With ``audit_strata`` in the plan the sample is stratified (``apps.raters.audit_strata``):
    each stratum is topped up to ⌈f_h · N_h⌉ of its N_h responses, in the same keyed order,
    and ``audit_count`` is not read.
    """
    plan = rating_plan(version)
    if plan.audit_count is None and plan.audit_fraction is None and plan.audit_strata is None:
        return 0
    if not RubricField.objects.filter(version=version).exclude(scored_by=ScoredBy.REVIEWERS):
        return 0  # nothing is machine-scored: there is nothing to audit
    candidates = audit_candidates(version)
    drawn = set(AuditSample.objects.filter(version=version).values_list("response_id", flat=True))
    if plan.audit_strata is not None:
        return _stratified_draw(version, plan, candidates, drawn)
    if plan.audit_count is not None:
        target = min(plan.audit_count, len(candidates))
    else:
        target = math.ceil(float(plan.audit_fraction or 0) * len(candidates))
    wanted = target - len(drawn)
    if wanted <= 0:
        return 0
    order = sorted(
        (pk for pk in candidates if pk not in drawn),
        key=lambda pk: keyed_order(plan.seed, f"audit:{pk}"),
    )
    AuditSample.objects.bulk_create(
        [AuditSample(version=version, response_id=pk) for pk in order[:wanted]]
    )
    return min(wanted, len(order))


def _stratified_draw(
    version: ProtocolVersion, plan: RatingPlan, candidates: list[int], drawn: set[int]
) -> int:
    assert plan.audit_strata is not None
    of = response_strata(version, plan.audit_strata, candidates)
    added: list[int] = []
    for stratum, target in stratified_targets(plan.audit_strata, of).items():
        members = [pk for pk in candidates if of[pk] == stratum]
        wanted = target - sum(1 for pk in members if pk in drawn)
        order = sorted(
            (pk for pk in members if pk not in drawn),
            key=lambda pk: keyed_order(plan.seed, f"audit:{pk}"),
        )
        added += order[: max(wanted, 0)]
    AuditSample.objects.bulk_create(
        [AuditSample(version=version, response_id=pk) for pk in sorted(added)]
    )
    return len(added)
