"""The human audit sample of machine-scored responses (issue #13's "human audit sample").

Drawn with the plan's seed when scoring opens (``scoring_open`` calls ``audit_sample_draw``); the
sample's responses go to the blind queue as usual, and on their tasks reviewers also score the
fields a scorer scores, so that machine and human values can be compared. Nothing a reviewer
sees says a task belongs to the sample.
"""

from __future__ import annotations

import math

from apps.protocols.models import ProtocolVersion
from apps.raters.models import AuditSample, RubricField, ScoredBy
from apps.raters.plan import rating_plan
from apps.raters.services.queue import keyed_order
from apps.responses.models import Exclusion, Response


def audit_sample_draw(*, version: ProtocolVersion) -> int:
    """Draw the plan's human audit sample of machine-scored responses; the number added.

    Called by ``scoring_open`` inside its transaction. The plan gives ``audit_count`` (a number
    of responses) or ``audit_fraction`` (a share of them, rounded up); with neither nothing is
    drawn. Responses (not excluded) are taken in the order of a keyed hash of the plan's seed
    and the response (``keyed_order(seed, "audit:<id>")``), so the sample is fixed by the seed
    and unrelated to the design's order. Each opening tops the sample up to its target over the
    responses then present; a response once drawn stays drawn.
    """
    plan = rating_plan(version)
    if plan.audit_count is None and plan.audit_fraction is None:
        return 0
    if not RubricField.objects.filter(version=version).exclude(scored_by=ScoredBy.REVIEWERS):
        return 0  # nothing is machine-scored: there is nothing to audit
    candidates = list(
        Response.objects.filter(version_id=version.pk)
        .exclude(pk__in=Exclusion.objects.filter(version=version).values("attempt__response"))
        .values_list("pk", flat=True)
    )
    drawn = set(AuditSample.objects.filter(version=version).values_list("response_id", flat=True))
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
