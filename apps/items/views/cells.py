"""An item's cells: writing one (its prompt and scoring key, or absent with a reason), the key's
live preview, and deleting one."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods, require_POST

from apps.items import services
from apps.items.access import get_cell_for, get_item_for, get_level_for
from apps.items.forms import KEY_HELP, CellForm
from apps.items.models import Cell
from apps.items.views.common import acted, design_version, page_context, run, to_page


def _cell_initial(cell: Cell | None) -> dict[str, Any]:
    if cell is None:
        return {}
    units = [
        services.KeyUnitSpec(u.text, u.executable)
        for u in sorted(cell.key_units.all(), key=lambda u: u.position)
    ]
    return {
        "prompt": cell.prompt,
        "key": services.key_units_format(units),
        "absent": cell.absent,
        "absent_reason": cell.absent_reason,
        "requires_tools": ", ".join(cell.requires_tools),
        "expected_kind": cell.expected_kind,
        "expected_output": (
            json.dumps(cell.expected_output, ensure_ascii=False)
            if cell.expected_kind == "json"
            else (cell.expected_output or "")
        ),
    }


@login_required
@require_http_methods(["GET", "POST"])
def cell_edit(
    request: HttpRequest, protocol_code: str, label: str, item_code: str, level_code: str
) -> HttpResponse:
    """Write one cell: its prompt and scoring key, or record it absent with a reason."""
    version = design_version(request, protocol_code, label)
    item = get_item_for(version=version, code=item_code)
    level = get_level_for(version=version, code=level_code)
    cell = get_cell_for(item=item, level=level)
    form = CellForm(request.POST or None, initial=_cell_initial(cell))
    family = item.family
    refusal = ""
    if family.max_level is not None and level.ordinal > family.max_level:
        try:
            services.stopping_rule_check(family=family, level=level, item_code=item.code)
        except ValidationError as error:
            refusal = error.message_dict["level"][0]
    if request.method == "POST":
        design_version(request, protocol_code, label, write=True)
        if form.is_valid() and run(
            form,
            lambda: services.cell_save(
                item=item,
                level=level,
                prompt=form.cleaned_data["prompt"],
                absent=form.cleaned_data["absent"],
                absent_reason=form.cleaned_data["absent_reason"],
                key=services.key_units_parse(form.cleaned_data["key"]),
                expected_kind=form.cleaned_data["expected_kind"],
                expected_output=form.cleaned_data["expected_value"],
                requires_tools=form.cleaned_data["requires_tools"],
            ),
        ):
            messages.success(request, f"Item {item.code} at {level.code} saved.")
            return to_page("items:item", version, code=item.code)
    expected_json = ""
    if cell is not None and cell.expected_kind == "json":
        expected_json = json.dumps(cell.expected_output, ensure_ascii=False, indent=2)
    return render(
        request,
        "items/cell_edit.html",
        page_context(
            request,
            version,
            item=item,
            level=level,
            cell=cell,
            form=form,
            refusal=refusal,
            key_help=KEY_HELP,
            expected_json=expected_json,
        ),
    )


@login_required
@require_POST
def cell_key_preview(request: HttpRequest, protocol_code: str, label: str) -> HttpResponse:
    """htmx: the key as it will be saved, unit by unit, while the author types it."""
    design_version(request, protocol_code, label, write=True)
    units = services.key_units_parse(request.POST.get("key", ""))
    return render(request, "items/_key_preview.html", {"units": units})


@login_required
@require_POST
def cell_delete(
    request: HttpRequest, protocol_code: str, label: str, item_code: str, level_code: str
) -> HttpResponse:
    version = design_version(request, protocol_code, label, write=True)
    item = get_item_for(version=version, code=item_code)
    level = get_level_for(version=version, code=level_code)
    cell = get_cell_for(item=item, level=level)
    if cell is not None:
        done = f"Item {item.code} at {level.code} removed."
        acted(request, partial(services.cell_delete, cell=cell), done)
    return to_page("items:item", version, code=item.code)
