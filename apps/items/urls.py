from collections.abc import Callable
from typing import Any, cast

from django.http.response import HttpResponseBase
from django.urls import path

from apps.items import apis
from apps.items.parts import CONDITION, FACTOR, FAMILY, ITEM, LEVEL, DesignPart
from apps.items.views import cells, grid, harm_review, parts, transfer

app_name = "items"

_v = "protocols/<str:protocol_code>/v/<str:label>/design/"

# The parts with the same three pages and three endpoints each, and the plural that names their
# list (``items:levels``) and their URLs.
_PARTS = [
    (part, part.listing.removeprefix("items:")) for part in (LEVEL, FAMILY, CONDITION, FACTOR)
]

urlpatterns = [
    path(_v, grid.design, name="design"),
    # The design's parts: the same three views for each (``apps.items.parts``)
    *(
        route
        for part, plural in _PARTS
        for one in [f"{_v}{plural}/<str:{part.page_kwarg or part.key}>/"]
        for route in (
            path(f"{_v}{plural}/", parts.part_list, {"part": part}, name=plural),
            path(one, parts.part_edit, {"part": part}, name=f"{part.noun}-edit"),
            path(f"{one}delete/", parts.part_delete, {"part": part}, name=f"{part.noun}-delete"),
        )
    ),
    path(f"{_v}levels-default/", parts.levels_default, name="levels-default"),
    path(f"{_v}new-item/", parts.item_new, name="item-new"),
    path(f"{_v}items/<str:code>/", parts.item_detail, name="item"),
    path(f"{_v}items/<str:code>/delete/", parts.part_delete, {"part": ITEM}, name="item-delete"),
    # An item's cells
    path(f"{_v}items/<str:item_code>/cells/<str:level_code>/", cells.cell_edit, name="cell"),
    path(
        f"{_v}items/<str:item_code>/cells/<str:level_code>/delete/",
        cells.cell_delete,
        name="cell-delete",
    ),
    path(f"{_v}key-preview/", cells.cell_key_preview, name="key-preview"),
    path(f"{_v}import/", transfer.design_import, name="import"),
    path(f"{_v}import/confirm/", transfer.design_import_confirm, name="import-confirm"),
    path(f"{_v}export.<str:fmt>", transfer.design_export, name="export"),
    path(f"{_v}harm-review/", harm_review.harm_review, name="harm-review"),
    path(f"{_v}harm-review/open/", harm_review.harm_review_open, name="harm-review-open"),
    path(
        f"{_v}harm-review/<str:code>/third/",
        harm_review.harm_review_third,
        name="harm-review-third",
    ),
    path("harm-reviews/<str:token>/", harm_review.harm_review_task_page, name="harm-review-task"),
]

_a = "protocols/<str:protocol_code>/versions/<str:label>/design"

# Every part has the same three endpoints, an item too (it has no listing page of its own, so
# its plural is given here).
_API_PARTS = [*_PARTS, (ITEM, "items")]


def _api(part: DesignPart[Any], action: str) -> Callable[..., HttpResponseBase]:
    """``apis.<Part><action>Api``, one of the part's endpoints (``apis.part_endpoints``)."""
    return cast(
        Callable[..., HttpResponseBase], getattr(apis, f"{part.title}{action}Api").as_view()
    )


api_urlpatterns = [
    path(_a, apis.DesignDetailApi.as_view(), name="design"),
    path(f"{_a}/problems", apis.DesignProblemsApi.as_view(), name="design-problems"),
    *(
        route
        for part, plural in _API_PARTS
        for one in [f"{_a}/{plural}/<str:{part.key}>"]
        for route in (
            path(f"{_a}/{plural}", _api(part, "Create"), name=f"{part.noun}-create"),
            path(f"{one}/update", _api(part, "Update"), name=f"{part.noun}-update"),
            path(f"{one}/delete", _api(part, "Delete"), name=f"{part.noun}-delete"),
        )
    ),
    path(f"{_a}/levels/default", apis.LevelScaleDefaultApi.as_view(), name="levels-default"),
    path(
        f"{_a}/items/<str:item_code>/cells/<str:level_code>",
        apis.CellSaveApi.as_view(),
        name="cell-save",
    ),
    path(
        f"{_a}/items/<str:item_code>/cells/<str:level_code>/delete",
        apis.CellDeleteApi.as_view(),
        name="cell-delete",
    ),
    path(f"{_a}/import", apis.DesignImportApi.as_view(), name="import"),
    path(f"{_a}/export/<str:fmt>", apis.DesignExportApi.as_view(), name="export"),
    path(f"{_a}/harm-review", apis.HarmReviewStatusApi.as_view(), name="harm-review"),
    path(f"{_a}/harm-review/open", apis.HarmReviewOpenApi.as_view(), name="harm-review-open"),
    path(
        f"{_a}/harm-review/items/<str:code>/third",
        apis.HarmReviewThirdApi.as_view(),
        name="harm-review-third",
    ),
    path("harm-reviews", apis.HarmReviewQueueApi.as_view(), name="harm-review-queue"),
    path("harm-reviews/<str:token>", apis.HarmReviewTaskApi.as_view(), name="harm-review-task"),
    path(
        "harm-reviews/<str:token>/verdict",
        apis.HarmReviewSubmitApi.as_view(),
        name="harm-review-submit",
    ),
]
