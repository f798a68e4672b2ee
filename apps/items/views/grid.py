"""The design grid: items × levels, each cell by state, and what blocks the freeze."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from apps.items import selectors
from apps.items.selectors import CellState
from apps.items.views.common import design_version, page_context


@login_required
def design(request: HttpRequest, protocol_code: str, label: str) -> HttpResponse:
    """Items × levels, each cell coloured and labelled by state, and what blocks the freeze."""
    version = design_version(request, protocol_code, label)
    grid = selectors.design_grid(version)
    return render(
        request,
        "items/design.html",
        page_context(
            request,
            version,
            grid=grid,
            problems=selectors.design_problems(version),
            states=[
                (state, name, grid.counts[state], state in CellState.BLOCKING)
                for state, name in CellState.LABELS.items()
            ],
            families=selectors.families_of(version),
            conditions=selectors.conditions_of(version),
            factors=selectors.factors_of(version),
            expected_outputs=selectors.design_expected_outputs(version),
        ),
    )
