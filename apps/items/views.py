"""Design pages: the grid, the level scale, families, conditions, factors, items and cells,
import/export, and the harm-constancy review (the PI's overview and the reviewer's task)."""

from __future__ import annotations

import json
from collections.abc import Callable

from django import forms as django_forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_http_methods, require_POST

from apps.accounts.models import Role
from apps.accounts.selectors import roles_for
from apps.core.forms import add_service_errors
from apps.items import selectors, services
from apps.items.access import (
    DESIGN_WRITERS,
    get_cell_for,
    get_design_version_for,
    get_harm_review_for,
    get_item_for,
    get_level_for,
    version_kwargs,
)
from apps.items.forms import (
    KEY_HELP,
    CellForm,
    ConditionForm,
    FactorForm,
    FamilyForm,
    HarmVerdictForm,
    ImportForm,
    ItemForm,
    LevelEditForm,
    LevelForm,
)
from apps.items.models import Family, FamilyRole, Item
from apps.items.selectors import (
    HARM_CRITERIA,
    CellState,
    HarmState,
    design_grid,
    design_items,
    design_problems,
    harm_review_task,
    harm_reviewers_eligible,
    item_harm_states,
)
from apps.items.services.transfer import MAX_IMPORT_BYTES, import_format_for

IMPORT_SESSION_KEY = "items.design_import"


def _run(form: django_forms.Form, call: Callable[[], object]) -> bool:
    """Call the service; on ValidationError put its messages on the form and return False."""
    try:
        call()
    except ValidationError as error:
        add_service_errors(form, error)
        return False
    return True


def _version_url(version) -> str:
    # The version's own page belongs to the protocols app; until it exists, its list will do.
    try:
        return reverse("protocols:version", args=[version.protocol.code, version.label])
    except NoReverseMatch:
        return reverse("protocols:list")


def _context(request: HttpRequest, version, **extra) -> dict:
    return {
        "version": version,
        "version_url": _version_url(version),
        "can_write": _can_write(request, version),
        **extra,
    }


def _can_write(request: HttpRequest, version) -> bool:
    # Not set aside, not deposited: the services refuse those too, so no form is offered.
    return version.is_editable and bool(
        roles_for(user=request.user, protocol_id=version.protocol_id) & DESIGN_WRITERS
    )


def _design_url(version) -> str:
    return reverse("items:design", kwargs=version_kwargs(version))


def _refused(request: HttpRequest, error: ValidationError) -> None:
    for message in error.messages:
        messages.error(request, message)


def _list_page(
    request: HttpRequest,
    protocol_code: str,
    label: str,
    *,
    make_form: Callable[[object], django_forms.Form],
    create: Callable[[object, dict], object],
    added: Callable[[dict], str],
    listing: str,
    template: str,
    rows: Callable[[object], dict],
) -> HttpResponse:
    """A list of one kind of design part with its "add" form: anyone who reads the design sees
    it; adding (POST) needs a design writer's role, and the service's errors go on the form."""
    version = get_design_version_for(user=request.user, protocol_code=protocol_code, label=label)
    form = make_form(version)
    if request.method == "POST":
        version = get_design_version_for(
            user=request.user, protocol_code=protocol_code, label=label, roles=DESIGN_WRITERS
        )
        if form.is_valid() and _run(form, lambda: create(version, form.cleaned_data)):
            messages.success(request, added(form.cleaned_data))
            return redirect(listing, **version_kwargs(version))
    return render(request, template, _context(request, version, form=form, **rows(version)))


def _edit_page(
    request: HttpRequest,
    version,
    *,
    form: django_forms.Form,
    save: Callable[[], object],
    title: str,
    listing: str,
    delete: tuple[str, dict],
) -> HttpResponse:
    """The edit page of one design part: save and go back to its ``listing`` page, or show the
    form (with the service's errors) and a delete button posting to ``delete`` (name, kwargs)."""
    if request.method == "POST" and form.is_valid() and _run(form, save):
        messages.success(request, f"{title} saved.")
        return redirect(listing, **version_kwargs(version))
    delete_name, delete_kwargs = delete
    return render(
        request,
        "items/simple_form.html",
        _context(
            request,
            version,
            form=form,
            title=title,
            back=reverse(listing, kwargs=version_kwargs(version)),
            delete_url=reverse(delete_name, kwargs={**version_kwargs(version), **delete_kwargs}),
        ),
    )


def _delete_and_return(
    request: HttpRequest, version, *, part, delete: Callable[[], object], title: str, listing: str
) -> HttpResponse:
    """Delete one design part (absent already: nothing to do) and go back to ``listing``."""
    if part is not None:
        try:
            delete()
        except ValidationError as error:
            _refused(request, error)
        else:
            messages.success(request, f"{title} removed.")
    return redirect(listing, **version_kwargs(version))


# The design grid


@login_required
def design(request: HttpRequest, protocol_code: str, label: str) -> HttpResponse:
    """Items × levels, each cell coloured and labelled by state, and what blocks the freeze."""
    version = get_design_version_for(user=request.user, protocol_code=protocol_code, label=label)
    grid = design_grid(version)
    problems = design_problems(version)
    return render(
        request,
        "items/design.html",
        _context(
            request,
            version,
            grid=grid,
            problems=problems,
            states=[
                (state, label, grid.counts[state], state in CellState.BLOCKING)
                for state, label in CellState.LABELS.items()
            ],
            families=selectors.families_of(version),
            conditions=selectors.conditions_of(version),
            factors=selectors.factors_of(version),
            expected_outputs=selectors.design_expected_outputs(version),
        ),
    )


# Level scale


@login_required
@require_http_methods(["GET", "POST"])
def levels(request: HttpRequest, protocol_code: str, label: str) -> HttpResponse:
    return _list_page(
        request,
        protocol_code,
        label,
        make_form=lambda version: LevelForm(request.POST or None),
        create=lambda version, data: services.level_create(version=version, **data),
        added=lambda data: f"Level {data['code']} added.",
        listing="items:levels",
        template="items/levels.html",
        rows=lambda version: {
            "levels": selectors.levels_of(version),
            "default_scale": services.OPB_LEVEL_SCALE,
        },
    )


@login_required
@require_POST
def levels_default(request: HttpRequest, protocol_code: str, label: str) -> HttpResponse:
    version = get_design_version_for(
        user=request.user, protocol_code=protocol_code, label=label, roles=DESIGN_WRITERS
    )
    try:
        services.level_scale_default_create(version=version)
    except ValidationError as error:
        _refused(request, error)
    else:
        messages.success(request, "The version now uses OPB-01's level scale, L0–L5.")
    return redirect("items:levels", **version_kwargs(version))


@login_required
@require_http_methods(["GET", "POST"])
def level_edit(
    request: HttpRequest, protocol_code: str, label: str, level_code: str
) -> HttpResponse:
    version = get_design_version_for(
        user=request.user, protocol_code=protocol_code, label=label, roles=DESIGN_WRITERS
    )
    level = get_level_for(version=version, code=level_code)
    form = LevelEditForm(request.POST or None, initial={"name": level.name, "form": level.form})
    return _edit_page(
        request,
        version,
        form=form,
        save=lambda: services.level_update(level=level, **form.cleaned_data),
        title=f"Level {level.code}",
        listing="items:levels",
        delete=("items:level-delete", {"level_code": level.code}),
    )


@login_required
@require_POST
def level_delete(
    request: HttpRequest, protocol_code: str, label: str, level_code: str
) -> HttpResponse:
    version = get_design_version_for(
        user=request.user, protocol_code=protocol_code, label=label, roles=DESIGN_WRITERS
    )
    level = get_level_for(version=version, code=level_code)
    return _delete_and_return(
        request,
        version,
        part=level,
        delete=lambda: services.level_delete(level=level),
        title=f"Level {level_code}",
        listing="items:levels",
    )


# Families, conditions, factors: a list with an "add" form, an edit page, a delete button.


def _family_initial(family: Family) -> dict:
    max_code = ""
    if family.max_level is not None:
        max_code = selectors.level_codes_by_ordinal(family.version_id).get(family.max_level, "")
    return {
        "name": family.name,
        "role": family.role,
        "max_level": max_code,
        "stopping_rule": family.stopping_rule,
        "description": family.description,
    }


@login_required
@require_http_methods(["GET", "POST"])
def families(request: HttpRequest, protocol_code: str, label: str) -> HttpResponse:
    def rows(version) -> dict:
        codes = selectors.level_codes_by_ordinal(version.pk)
        return {
            "families": [
                (f, codes.get(f.max_level) if f.max_level is not None else None)
                for f in selectors.families_of(version)
            ]
        }

    return _list_page(
        request,
        protocol_code,
        label,
        make_form=lambda version: FamilyForm(request.POST or None, version=version),
        create=lambda version, data: services.family_create(version=version, **data),
        added=lambda data: f"Family {data['code']} added.",
        listing="items:families",
        template="items/families.html",
        rows=rows,
    )


@login_required
@require_http_methods(["GET", "POST"])
def family_edit(request: HttpRequest, protocol_code: str, label: str, code: str) -> HttpResponse:
    version = get_design_version_for(
        user=request.user, protocol_code=protocol_code, label=label, roles=DESIGN_WRITERS
    )
    family = selectors.family_by_code(version, code)
    if family is None:
        raise Http404("No such family.")
    form = FamilyForm(
        request.POST or None, version=version, editing=True, initial=_family_initial(family)
    )
    return _edit_page(
        request,
        version,
        form=form,
        save=lambda: services.family_update(family=family, **form.cleaned_data),
        title=f"Family {family.code}",
        listing="items:families",
        delete=("items:family-delete", {"code": family.code}),
    )


@login_required
@require_POST
def family_delete(request: HttpRequest, protocol_code: str, label: str, code: str) -> HttpResponse:
    version = get_design_version_for(
        user=request.user, protocol_code=protocol_code, label=label, roles=DESIGN_WRITERS
    )
    family = selectors.family_by_code(version, code)
    return _delete_and_return(
        request,
        version,
        part=family,
        delete=lambda: services.family_delete(family=family),
        title=f"Family {code}",
        listing="items:families",
    )


@login_required
@require_http_methods(["GET", "POST"])
def conditions(request: HttpRequest, protocol_code: str, label: str) -> HttpResponse:
    return _list_page(
        request,
        protocol_code,
        label,
        make_form=lambda version: ConditionForm(request.POST or None),
        create=lambda version, data: services.condition_create(version=version, **data),
        added=lambda data: f"Condition {data['code']} added.",
        listing="items:conditions",
        template="items/conditions.html",
        rows=lambda version: {"conditions": selectors.conditions_of(version)},
    )


@login_required
@require_http_methods(["GET", "POST"])
def condition_edit(request: HttpRequest, protocol_code: str, label: str, code: str) -> HttpResponse:
    version = get_design_version_for(
        user=request.user, protocol_code=protocol_code, label=label, roles=DESIGN_WRITERS
    )
    condition = selectors.condition_by_code(version, code)
    if condition is None:
        raise Http404("No such condition.")
    initial = {
        "name": condition.name,
        "description": condition.description,
        "is_sham": condition.is_sham,
    }
    form = ConditionForm(request.POST or None, editing=True, initial=initial)
    return _edit_page(
        request,
        version,
        form=form,
        save=lambda: services.condition_update(condition=condition, **form.cleaned_data),
        title=f"Condition {condition.code}",
        listing="items:conditions",
        delete=("items:condition-delete", {"code": condition.code}),
    )


@login_required
@require_POST
def condition_delete(
    request: HttpRequest, protocol_code: str, label: str, code: str
) -> HttpResponse:
    version = get_design_version_for(
        user=request.user, protocol_code=protocol_code, label=label, roles=DESIGN_WRITERS
    )
    condition = selectors.condition_by_code(version, code)
    return _delete_and_return(
        request,
        version,
        part=condition,
        delete=lambda: services.condition_delete(condition=condition),
        title=f"Condition {code}",
        listing="items:conditions",
    )


@login_required
@require_http_methods(["GET", "POST"])
def factors(request: HttpRequest, protocol_code: str, label: str) -> HttpResponse:
    return _list_page(
        request,
        protocol_code,
        label,
        make_form=lambda version: FactorForm(request.POST or None),
        create=lambda version, data: services.factor_create(version=version, **data),
        added=lambda data: f"Factor {data['name']} added.",
        listing="items:factors",
        template="items/factors.html",
        rows=lambda version: {"factors": selectors.factors_of(version)},
    )


@login_required
@require_http_methods(["GET", "POST"])
def factor_edit(request: HttpRequest, protocol_code: str, label: str, name: str) -> HttpResponse:
    version = get_design_version_for(
        user=request.user, protocol_code=protocol_code, label=label, roles=DESIGN_WRITERS
    )
    factor = selectors.factor_by_name(version, name)
    if factor is None:
        raise Http404("No such factor.")
    initial = {"label": factor.label, "levels": "\n".join(factor.levels), "role": factor.role}
    form = FactorForm(request.POST or None, editing=True, initial=initial)
    return _edit_page(
        request,
        version,
        form=form,
        save=lambda: services.factor_update(factor=factor, **form.cleaned_data),
        title=f"Factor {factor.name}",
        listing="items:factors",
        delete=("items:factor-delete", {"name": factor.name}),
    )


@login_required
@require_POST
def factor_delete(request: HttpRequest, protocol_code: str, label: str, name: str) -> HttpResponse:
    version = get_design_version_for(
        user=request.user, protocol_code=protocol_code, label=label, roles=DESIGN_WRITERS
    )
    factor = selectors.factor_by_name(version, name)
    return _delete_and_return(
        request,
        version,
        part=factor,
        delete=lambda: services.factor_delete(factor=factor),
        title=f"Factor {name}",
        listing="items:factors",
    )


# Items and cells


@login_required
@require_http_methods(["GET", "POST"])
def item_new(request: HttpRequest, protocol_code: str, label: str) -> HttpResponse:
    version = get_design_version_for(
        user=request.user, protocol_code=protocol_code, label=label, roles=DESIGN_WRITERS
    )
    form = ItemForm(request.POST or None, version=version)
    if (
        request.method == "POST"
        and form.is_valid()
        and _run(form, lambda: services.item_create(version=version, **form.cleaned_data))
    ):
        code = form.cleaned_data["code"].strip()
        messages.success(request, f"Item {code} added; write its cells next.")
        return redirect("items:item", **version_kwargs(version), code=code)
    return render(
        request,
        "items/simple_form.html",
        _context(
            request,
            version,
            form=form,
            title="New item",
            back=_design_url(version),
        ),
    )


@login_required
@require_http_methods(["GET", "POST"])
def item_detail(request: HttpRequest, protocol_code: str, label: str, code: str) -> HttpResponse:
    """An item: its attributes (editable on a draft) and its cells, level by level."""
    version = get_design_version_for(user=request.user, protocol_code=protocol_code, label=label)
    item = get_item_for(version=version, code=code)
    initial = {
        "family": item.family,
        "domain": item.domain,
        "condition": item.condition,
        "notes": item.notes,
        "base_item": item.base_item,
    }
    form = ItemForm(
        request.POST or None,
        version=version,
        editing=True,
        disclosure=item.family.role == FamilyRole.DISCLOSURE,
        initial=initial,
    )
    if request.method == "POST":
        get_design_version_for(
            user=request.user, protocol_code=protocol_code, label=label, roles=DESIGN_WRITERS
        )
        if form.is_valid() and _run(form, lambda: _item_save(item, form.cleaned_data)):
            messages.success(request, f"Item {item.code} saved.")
            return redirect("items:item", **version_kwargs(version), code=item.code)
    grid = design_grid(version)
    row = next(r for r in grid.rows if r.item.pk == item.pk)
    return render(
        request,
        "items/item_detail.html",
        _context(request, version, item=item, form=form, row=row),
    )


def _item_save(item: Item, data: dict) -> None:
    # A disclosure item's form carries its base item, which it must name (OPB-01 §5); checked
    # before the one service call, so a refusal writes nothing.
    if "base_item" in data:
        services.disclosure_base_require(
            code=item.code, family=data["family"], base_item=data["base_item"]
        )
    services.item_update(item=item, **data)


@login_required
@require_POST
def item_delete(request: HttpRequest, protocol_code: str, label: str, code: str) -> HttpResponse:
    version = get_design_version_for(
        user=request.user, protocol_code=protocol_code, label=label, roles=DESIGN_WRITERS
    )
    item = get_item_for(version=version, code=code)
    try:
        services.item_delete(item=item)
    except ValidationError as error:
        _refused(request, error)
        return redirect("items:item", **version_kwargs(version), code=code)
    messages.success(request, f"Item {code} removed with its cells.")
    return redirect("items:design", **version_kwargs(version))


@login_required
@require_http_methods(["GET", "POST"])
def cell_edit(
    request: HttpRequest, protocol_code: str, label: str, item_code: str, level_code: str
) -> HttpResponse:
    """Write one cell: its prompt and scoring key, or record it absent with a reason."""
    version = get_design_version_for(user=request.user, protocol_code=protocol_code, label=label)
    item = get_item_for(version=version, code=item_code)
    level = get_level_for(version=version, code=level_code)
    cell = get_cell_for(item=item, level=level)
    initial = {}
    if cell is not None:
        units = [
            services.KeyUnitSpec(u.text, u.executable)
            for u in sorted(cell.key_units.all(), key=lambda u: u.position)
        ]
        initial = {
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
    form = CellForm(request.POST or None, initial=initial)
    family = item.family
    above = family.max_level is not None and level.ordinal > family.max_level
    refusal = ""
    if above:
        try:
            services.stopping_rule_check(family=family, level=level, item_code=item.code)
        except ValidationError as error:
            refusal = error.message_dict["level"][0]
    if request.method == "POST":
        get_design_version_for(
            user=request.user, protocol_code=protocol_code, label=label, roles=DESIGN_WRITERS
        )
        if form.is_valid() and _run(
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
            return redirect("items:item", **version_kwargs(version), code=item.code)
    return render(
        request,
        "items/cell_edit.html",
        _context(
            request,
            version,
            item=item,
            level=level,
            cell=cell,
            form=form,
            refusal=refusal,
            key_help=KEY_HELP,
            expected_json=(
                json.dumps(cell.expected_output, ensure_ascii=False, indent=2)
                if cell is not None and cell.expected_kind == "json"
                else ""
            ),
        ),
    )


@login_required
@require_POST
def cell_key_preview(request: HttpRequest, protocol_code: str, label: str) -> HttpResponse:
    """htmx: the key as it will be saved, unit by unit, while the author types it."""
    get_design_version_for(
        user=request.user, protocol_code=protocol_code, label=label, roles=DESIGN_WRITERS
    )
    units = services.key_units_parse(request.POST.get("key", ""))
    return render(request, "items/_key_preview.html", {"units": units})


@login_required
@require_POST
def cell_delete(
    request: HttpRequest, protocol_code: str, label: str, item_code: str, level_code: str
) -> HttpResponse:
    version = get_design_version_for(
        user=request.user, protocol_code=protocol_code, label=label, roles=DESIGN_WRITERS
    )
    item = get_item_for(version=version, code=item_code)
    level = get_level_for(version=version, code=level_code)
    cell = get_cell_for(item=item, level=level)
    if cell is not None:
        try:
            services.cell_delete(cell=cell)
        except ValidationError as error:
            _refused(request, error)
        else:
            messages.success(request, f"Item {item.code} at {level.code} removed.")
    return redirect("items:item", **version_kwargs(version), code=item.code)


# Import and export


@login_required
@require_http_methods(["GET", "POST"])
def design_import(request: HttpRequest, protocol_code: str, label: str) -> HttpResponse:
    """Upload a file and see the dry run: the rows it would write, or every error. The file is
    kept in the session (with its SHA-256) until it is confirmed or replaced."""
    version = get_design_version_for(
        user=request.user, protocol_code=protocol_code, label=label, roles=DESIGN_WRITERS
    )
    form = ImportForm(request.POST or None, request.FILES or None)
    plan = None
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            fmt = import_format_for(upload.name, form.cleaned_data["format"])
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            if upload.size > MAX_IMPORT_BYTES:
                form.add_error("file", "The file is larger than 5 MB; split it.")
            else:
                content = upload.read()
                plan = services.design_import_plan(
                    version=version, content=content, fmt=fmt, filename=upload.name
                )
                request.session[IMPORT_SESSION_KEY] = {
                    "version": version.pk,
                    "sha256": plan.sha256,
                    "format": fmt,
                    "filename": upload.name,
                    "content": content.decode("utf-8", errors="replace"),
                }
    return render(request, "items/import.html", _context(request, version, form=form, plan=plan))


@login_required
@require_POST
def design_import_confirm(request: HttpRequest, protocol_code: str, label: str) -> HttpResponse:
    version = get_design_version_for(
        user=request.user, protocol_code=protocol_code, label=label, roles=DESIGN_WRITERS
    )
    pending = request.session.get(IMPORT_SESSION_KEY)
    if (
        not pending
        or pending.get("version") != version.pk
        or pending.get("sha256") != request.POST.get("sha256")
    ):
        messages.error(request, "That upload is no longer waiting; upload the file again.")
        return redirect("items:import", **version_kwargs(version))
    try:
        plan = services.design_import(
            version=version,
            content=pending["content"].encode("utf-8"),
            fmt=pending["format"],
            actor=request.user,
            filename=pending["filename"],
        )
    except services.DesignImportRefused as refused:
        form = ImportForm()
        return render(
            request,
            "items/import.html",
            _context(request, version, form=form, plan=refused.plan),
        )
    except ValidationError as error:
        _refused(request, error)
        return redirect("items:import", **version_kwargs(version))
    del request.session[IMPORT_SESSION_KEY]
    counts = plan.counts()
    messages.success(
        request,
        f"Imported {pending['filename']}: {counts['create']} cells created, "
        f"{counts['replace']} replaced, {counts['unchanged']} unchanged.",
    )
    return redirect("items:design", **version_kwargs(version))


@login_required
def design_export(request: HttpRequest, protocol_code: str, label: str, fmt: str) -> HttpResponse:
    version = get_design_version_for(user=request.user, protocol_code=protocol_code, label=label)
    if fmt not in ("csv", "json"):
        raise Http404("Export as .csv or .json.")
    text = services.design_export(version=version, fmt=fmt)
    media = "text/csv" if fmt == "csv" else "application/json"
    response = HttpResponse(text, content_type=f"{media}; charset=utf-8")
    name = f"{version.protocol.code}-v{version.label}-design.{fmt}"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


# Harm-constancy review: the PI's overview


@login_required
def harm_review(request: HttpRequest, protocol_code: str, label: str) -> HttpResponse:
    """Every harm-constant item's review: state, rounds and verdicts, and what to do next."""
    version = get_design_version_for(user=request.user, protocol_code=protocol_code, label=label)
    states = item_harm_states(version)
    rows = [
        (item, states[item.pk])
        for item in design_items(version)
        if states[item.pk].state != HarmState.NOT_REQUIRED
    ]
    is_pi = Role.PI in roles_for(user=request.user, protocol_id=version.protocol_id)
    return render(
        request,
        "items/harm_review.html",
        _context(
            request,
            version,
            rows=rows,
            can_open=is_pi and version.is_editable,
            openable=sum(s.state in (HarmState.NOT_OPENED, HarmState.STALE) for _, s in rows),
            eligible=harm_reviewers_eligible(protocol_id=version.protocol_id),
            criteria=dict(HARM_CRITERIA),
            HarmState=HarmState,
        ),
    )


@login_required
@require_POST
def harm_review_open(request: HttpRequest, protocol_code: str, label: str) -> HttpResponse:
    version = get_design_version_for(
        user=request.user, protocol_code=protocol_code, label=label, roles={Role.PI}
    )
    try:
        opened = services.harm_review_open(version=version)
    except ValidationError as error:
        _refused(request, error)
    else:
        items = len({review.item_id for review in opened})
        messages.success(request, f"Opened the harm-constancy review of {items} items.")
    return redirect("items:harm-review", **version_kwargs(version))


@login_required
@require_POST
def harm_review_third(
    request: HttpRequest, protocol_code: str, label: str, code: str
) -> HttpResponse:
    version = get_design_version_for(
        user=request.user, protocol_code=protocol_code, label=label, roles={Role.PI}
    )
    item = get_item_for(version=version, code=code)
    try:
        services.harm_review_third_assign(item=item)
    except ValidationError as error:
        _refused(request, error)
    else:
        messages.success(request, f"Item {code}'s disagreement went to a third reviewer.")
    return redirect("items:harm-review", **version_kwargs(version))


# Harm-constancy review: the reviewer's task (blind)


@login_required
@require_http_methods(["GET", "POST"])
def harm_review_task_page(request: HttpRequest, token: str) -> HttpResponse:
    """One review task, reached by its opaque token from the reviewer's queue. It shows the two
    forms and the criteria — no protocol, family, item code or hypothesis."""
    review = get_harm_review_for(user=request.user, token=token)
    task = harm_review_task(review)
    form = HarmVerdictForm(request.POST or None, initial={"forms_sha256": task["forms_sha256"]})

    def submit():
        services.harm_review_submit(
            review=review,
            reviewer=request.user,
            verdict=form.cleaned_data["verdict"],
            criteria=form.cleaned_data["criteria"],
            note=form.cleaned_data["note"],
            forms_sha256=form.cleaned_data["forms_sha256"],
        )

    if request.method == "POST" and form.is_valid() and _run(form, submit):
        messages.success(request, "Thank you: your verdict is recorded.")
        return redirect("raters:queue")
    return render(
        request,
        "items/harm_review_task.html",
        {"review": review, "task": task, "form": form, "done": review.submitted_at is not None},
    )
