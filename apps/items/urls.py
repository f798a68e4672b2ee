from django.urls import path

from apps.items import apis
from apps.items.parts import CONDITION, FACTOR, FAMILY, ITEM, LEVEL
from apps.items.views import cells, grid, harm_review, parts, transfer

app_name = "items"

_v = "protocols/<str:protocol_code>/v/<str:label>/design/"

urlpatterns = [
    path(_v, grid.design, name="design"),
    # The design's parts: the same three views for each (``apps.items.parts``)
    path(f"{_v}levels/", parts.part_list, {"part": LEVEL}, name="levels"),
    path(f"{_v}levels-default/", parts.levels_default, name="levels-default"),
    path(f"{_v}levels/<str:level_code>/", parts.part_edit, {"part": LEVEL}, name="level-edit"),
    path(
        f"{_v}levels/<str:level_code>/delete/",
        parts.part_delete,
        {"part": LEVEL},
        name="level-delete",
    ),
    path(f"{_v}families/", parts.part_list, {"part": FAMILY}, name="families"),
    path(f"{_v}families/<str:code>/", parts.part_edit, {"part": FAMILY}, name="family-edit"),
    path(
        f"{_v}families/<str:code>/delete/",
        parts.part_delete,
        {"part": FAMILY},
        name="family-delete",
    ),
    path(f"{_v}conditions/", parts.part_list, {"part": CONDITION}, name="conditions"),
    path(
        f"{_v}conditions/<str:code>/",
        parts.part_edit,
        {"part": CONDITION},
        name="condition-edit",
    ),
    path(
        f"{_v}conditions/<str:code>/delete/",
        parts.part_delete,
        {"part": CONDITION},
        name="condition-delete",
    ),
    path(f"{_v}factors/", parts.part_list, {"part": FACTOR}, name="factors"),
    path(f"{_v}factors/<str:name>/", parts.part_edit, {"part": FACTOR}, name="factor-edit"),
    path(
        f"{_v}factors/<str:name>/delete/",
        parts.part_delete,
        {"part": FACTOR},
        name="factor-delete",
    ),
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

api_urlpatterns = [
    path(_a, apis.DesignDetailApi.as_view(), name="design"),
    path(f"{_a}/problems", apis.DesignProblemsApi.as_view(), name="design-problems"),
    path(f"{_a}/levels", apis.LevelCreateApi.as_view(), name="level-create"),
    path(f"{_a}/levels/default", apis.LevelScaleDefaultApi.as_view(), name="levels-default"),
    path(f"{_a}/levels/<str:code>/update", apis.LevelUpdateApi.as_view(), name="level-update"),
    path(f"{_a}/levels/<str:code>/delete", apis.LevelDeleteApi.as_view(), name="level-delete"),
    path(f"{_a}/families", apis.FamilyCreateApi.as_view(), name="family-create"),
    path(f"{_a}/families/<str:code>/update", apis.FamilyUpdateApi.as_view(), name="family-update"),
    path(f"{_a}/families/<str:code>/delete", apis.FamilyDeleteApi.as_view(), name="family-delete"),
    path(f"{_a}/conditions", apis.ConditionCreateApi.as_view(), name="condition-create"),
    path(
        f"{_a}/conditions/<str:code>/update",
        apis.ConditionUpdateApi.as_view(),
        name="condition-update",
    ),
    path(
        f"{_a}/conditions/<str:code>/delete",
        apis.ConditionDeleteApi.as_view(),
        name="condition-delete",
    ),
    path(f"{_a}/factors", apis.FactorCreateApi.as_view(), name="factor-create"),
    path(f"{_a}/factors/<str:name>/update", apis.FactorUpdateApi.as_view(), name="factor-update"),
    path(f"{_a}/factors/<str:name>/delete", apis.FactorDeleteApi.as_view(), name="factor-delete"),
    path(f"{_a}/items", apis.ItemCreateApi.as_view(), name="item-create"),
    path(f"{_a}/items/<str:code>/update", apis.ItemUpdateApi.as_view(), name="item-update"),
    path(f"{_a}/items/<str:code>/delete", apis.ItemDeleteApi.as_view(), name="item-delete"),
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
