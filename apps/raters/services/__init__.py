"""Every write of blind rating. Import from here: ``from apps.raters.services import task_next``.

Reads live in ``apps.raters.selectors``."""

from apps.raters.services.queue import (
    assignments_expire,
    reservation_release,
    reviewer_offset,
    scoring_open,
    shuffle_key_for,
    task_next,
    task_skip,
)
from apps.raters.services.rubric import (
    rubric_apply_template,
    rubric_copy,
    rubric_create,
    rubric_ensure,
    rubric_field_add,
    rubric_field_check,
    rubric_field_delete,
    rubric_field_move,
    rubric_field_problems,
    rubric_field_update,
)
from apps.raters.services.scoring import (
    score_correct,
    score_submit,
    score_submit_outcome,
)
from apps.raters.services.study_queue import study_queue_ensure, study_queue_rename

__all__ = [
    "assignments_expire",
    "reservation_release",
    "reviewer_offset",
    "rubric_apply_template",
    "rubric_copy",
    "rubric_create",
    "rubric_ensure",
    "rubric_field_add",
    "rubric_field_check",
    "rubric_field_delete",
    "rubric_field_move",
    "rubric_field_problems",
    "rubric_field_update",
    "score_correct",
    "score_submit",
    "score_submit_outcome",
    "scoring_open",
    "shuffle_key_for",
    "study_queue_ensure",
    "study_queue_rename",
    "task_next",
    "task_skip",
]
