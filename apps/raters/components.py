"""The rubric's part in a version's life: freeze-gate checks, frozen document, amendment copy."""

from django.urls import reverse

from apps.protocols.components import Problem, VersionComponent, register_component
from apps.protocols.plans import plan_template
from apps.raters.models import Rubric
from apps.raters.selectors import (
    open_task_count,
    rubric_document,
    rubric_document_revise,
    scorer_checks,
    scorers_document,
)
from apps.raters.services.closing import close_work
from apps.raters.services.revocation import on_role_removed, on_withdraw
from apps.raters.services.rubric import rubric_copy, rubric_field_problems
from apps.raters.services.scorers import scorers_copy


def _scores_responses(version) -> bool:
    # A preset whose responses blind reviewers score (PlanTemplate.reviewer_scored, declared
    # by its kind) wants a rubric whatever k says; any other plan once k > 0.
    if plan_template(version.protocol.template).reviewer_scored:
        return True
    k = version.parameters.filter(name="scores_per_response").values_list("value", flat=True)
    return any(value.strip() not in ("", "0") for value in k)


def rubric_checks(version):
    rubric = Rubric.objects.filter(version=version).first()
    url = reverse("raters:rubric", args=[version.protocol.code, version.label])
    if rubric is None:
        if _scores_responses(version):
            yield Problem(
                "rubric_missing",
                "the version has no rubric: reviewers would not know how to score responses",
                url,
            )
        return
    fields = list(rubric.fields.order_by("position"))
    if not fields:
        yield Problem("rubric_field_invalid", "the rubric has no fields", url)
    for field in fields:
        for problem in rubric_field_problems(field, fields):
            yield Problem("rubric_field_invalid", f"rubric {problem}", url)


def register() -> None:
    from apps.protocols.blobs import register_blob_reader, register_public_blob
    from apps.raters.selectors import (
        rubric_text_is_public,
        rubric_text_member_reader,
    )

    register_blob_reader("raters.rubric_text", rubric_text_member_reader)
    register_public_blob("raters.rubric_publication", rubric_text_is_public)
    register_component(
        VersionComponent(
            name="rubric",
            checks=rubric_checks,
            document=rubric_document,
            revise=rubric_document_revise,
            copy=rubric_copy,
            on_withdraw=on_withdraw,
            on_role_removed=on_role_removed,
            open_work=open_task_count,
            close_work=close_work,
        )
    )
    # The machine scorers' roster: identities frozen with the version (docs/machine-scores.md).
    register_component(
        VersionComponent(
            name="scorers", checks=scorer_checks, document=scorers_document, copy=scorers_copy
        )
    )
