"""The pages of every design part (``apps.items.parts``), written once: a list with its "add"
form, an edit page and a delete button serve the level scale, families, conditions and
factors; an item is added on a page of its own and edited on its page, with its cells."""

from __future__ import annotations

from functools import partial
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from apps.items import services
from apps.items.access import version_kwargs
from apps.items.parts import ITEM, DesignPart
from apps.items.selectors import design_grid
from apps.items.views.common import acted, design_version, page_context, refused, run, to_page


def _key(part: DesignPart[Any], url: dict[str, str]) -> str:
    return url[part.page_kwarg or part.key]


@login_required
@require_http_methods(["GET", "POST"])
def part_list(
    request: HttpRequest, protocol_code: str, label: str, part: DesignPart[Any]
) -> HttpResponse:
    """The list of one kind of part with its "add" form: anyone who reads the design sees it;
    adding (POST) needs a design writer's role, and the service's errors go on the form."""
    version = design_version(request, protocol_code, label)
    form = part.form(request.POST or None, version=version)
    if request.method == "POST":
        version = design_version(request, protocol_code, label, write=True)
        if form.is_valid() and run(form, lambda: part.create(version=version, **form.cleaned_data)):
            messages.success(request, f"{part.title} {form.cleaned_data[part.key]} added.")
            return to_page(part.listing, version)
    context = page_context(request, version, form=form, **part.rows(version))
    return render(request, part.template, context)


@login_required
@require_http_methods(["GET", "POST"])
def part_edit(
    request: HttpRequest, protocol_code: str, label: str, part: DesignPart[Any], **url: str
) -> HttpResponse:
    """One part's edit page (design writers only): save and go back to its list, or show the
    form with the service's errors, and a delete button."""
    version = design_version(request, protocol_code, label, write=True)
    edited = part.get(version=version, code=_key(part, url))
    form = part.form(request.POST or None, version=version, instance=edited)
    if (
        request.method == "POST"
        and form.is_valid()
        and run(form, lambda: part.update(**{part.noun: edited}, **form.cleaned_data))
    ):
        messages.success(request, f"{part.name_of(edited)} saved.")
        return to_page(part.listing, version)
    return render(
        request,
        "items/simple_form.html",
        page_context(
            request,
            version,
            form=form,
            title=part.name_of(edited),
            back=reverse(part.listing, kwargs=version_kwargs(version)),
            delete_url=reverse(
                f"items:{part.noun}-delete", kwargs={**version_kwargs(version), **url}
            ),
        ),
    )


@login_required
@require_POST
def part_delete(
    request: HttpRequest, protocol_code: str, label: str, part: DesignPart[Any], **url: str
) -> HttpResponse:
    """Delete one part and go back to its list; refused, go back to where it is edited (an
    item's page) with the reasons. A part already deleted (a second click): nothing to do."""
    version = design_version(request, protocol_code, label, write=True)
    try:
        deleted = part.get(version=version, code=_key(part, url))
    except Http404:
        return to_page(part.listing, version)
    try:
        part.delete(**{part.noun: deleted})
    except ValidationError as error:
        refused(request, error)
        if part.own_page:
            return to_page(part.own_page, version, code=part.key_of(deleted))
        return to_page(part.listing, version)
    messages.success(request, f"{part.name_of(deleted)} removed.")
    return to_page(part.listing, version)


@login_required
@require_POST
def levels_default(request: HttpRequest, protocol_code: str, label: str) -> HttpResponse:
    version = design_version(request, protocol_code, label, write=True)
    acted(
        request,
        partial(services.level_scale_default_create, version=version),
        "The version now uses OPB-01's level scale, L0–L5.",
    )
    return to_page("items:levels", version)


# Items: added on a page of their own, edited on their page (which shows their cells)


@login_required
@require_http_methods(["GET", "POST"])
def item_new(request: HttpRequest, protocol_code: str, label: str) -> HttpResponse:
    version = design_version(request, protocol_code, label, write=True)
    form = ITEM.form(request.POST or None, version=version)
    if (
        request.method == "POST"
        and form.is_valid()
        and run(form, lambda: ITEM.create(version=version, **form.cleaned_data))
    ):
        code = form.cleaned_data["code"]
        messages.success(request, f"Item {code} added; write its cells next.")
        return to_page("items:item", version, code=code)
    design_url = reverse("items:design", kwargs=version_kwargs(version))
    context = page_context(request, version, form=form, title="New item", back=design_url)
    return render(request, "items/simple_form.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def item_detail(request: HttpRequest, protocol_code: str, label: str, code: str) -> HttpResponse:
    """An item: its attributes (editable on a draft) and its cells, level by level."""
    version = design_version(request, protocol_code, label)
    item = ITEM.get(version=version, code=code)
    form = ITEM.form(request.POST or None, version=version, instance=item)
    if request.method == "POST":
        design_version(request, protocol_code, label, write=True)
        if form.is_valid() and run(form, lambda: ITEM.update(item=item, **form.cleaned_data)):
            messages.success(request, f"Item {item.code} saved.")
            return to_page("items:item", version, code=item.code)
    row = next(r for r in design_grid(version).rows if r.item.pk == item.pk)
    context = page_context(request, version, item=item, form=form, row=row)
    return render(request, "items/item_detail.html", context)
