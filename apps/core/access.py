"""What every app's access helpers (``get_<kind>_for``) share."""

from typing import TypeVar

from django.db.models import Model, QuerySet
from django.http import Http404

M = TypeVar("M", bound=Model)


def first_or_404(rows: QuerySet[M], missing: str) -> M:
    """The first of ``rows``, or Http404 saying ``missing`` (the page and the API answer 404)."""
    found = rows.first()
    if found is None:
        raise Http404(missing)
    return found
