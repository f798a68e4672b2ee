"""Writing rows as every service does: validated first (``full_clean_save``), registered once by
their identity hash (``identified_get_or_create``), and copied into an amendment's new draft
(``row_copy``, ``rows_copy``: each app's ``VersionComponent.copy``)."""

import copy
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from django.db import IntegrityError, transaction
from django.db.models import Model

M = TypeVar("M", bound=Model)


def full_clean_save(row: M) -> M:
    """``row`` validated (``full_clean``: ValidationError naming the field) and then saved."""
    row.full_clean()
    row.save()
    return row


def identified_get_or_create(row: M) -> tuple[M, bool]:
    """The row of ``row``'s model whose (unique) ``identity_sha256`` is ``row``'s, else ``row``
    itself, validated (ValidationError naming the field) and saved: ``(row, created)``.

    Two registrations of one identity at once: the later INSERT fails on the unique index, in a
    savepoint, and that call returns the row the other one saved, so the caller never sees the
    race. Evaluands and machine scorers are registered this way (an identity is one row).
    """
    model = type(row)
    digest = row.identity_sha256  # type: ignore[attr-defined]
    existing = model._default_manager.filter(identity_sha256=digest).first()
    if existing is not None:
        return existing, False
    row.full_clean()
    try:
        with transaction.atomic():
            row.save()
    except IntegrityError:  # registered concurrently by someone else: theirs is the one
        return model._default_manager.get(identity_sha256=digest), False
    return row, True


def row_copy(row: M, fields: Sequence[str], **values: Any) -> M:
    """A new, unsaved row of ``row``'s model holding ``row``'s ``fields`` and then ``values``.

    ``fields`` are attribute names (``reviewer_id`` copies a key without loading the row it
    names); ``values`` give the draft as ``version`` and any key remapped to the draft's rows.
    Lists and dicts (JSON fields) are copied, so the two rows never share one.
    """
    return type(row)(**{f: copy.deepcopy(getattr(row, f)) for f in fields}, **values)


def rows_copy(rows: Iterable[M], fields: Sequence[str], **values: Any) -> dict[int, M]:
    """Each of ``rows`` copied (``row_copy``) and inserted, by the primary key of the row it
    copies, so that the rows that point to them can be remapped."""
    copies = {}
    for row in rows:
        copies[row.pk] = row_copy(row, fields, **values)
        copies[row.pk].save(force_insert=True)
    return copies
