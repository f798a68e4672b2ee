from django.urls import path

from apps.responses import apis, views

app_name = "responses"

urlpatterns = [
    path("evaluands/", views.evaluand_list, name="evaluands"),
    path("evaluands/new/", views.evaluand_new, name="evaluand-new"),
    path("evaluands/<int:pk>/", views.evaluand_detail, name="evaluand"),
    path("evaluands/<int:pk>/revise/", views.evaluand_revise_view, name="evaluand-revise"),
    path("versions/<int:version_id>/roster/", views.roster, name="roster"),
    path(
        "versions/<int:version_id>/roster/<int:entry_id>/remove/",
        views.roster_remove_view,
        name="roster-remove",
    ),
    path("versions/<int:version_id>/responses/", views.responses_page, name="responses"),
    path("versions/<int:version_id>/responses/import/", views.import_upload, name="import"),
    path(
        "versions/<int:version_id>/responses/import/confirm/",
        views.import_confirm,
        name="import-confirm",
    ),
    path("versions/<int:version_id>/responses/imports/", views.import_history, name="imports"),
    path("versions/<int:version_id>/attempts/", views.attempt_list, name="attempts"),
    path("attempts/<int:pk>/", views.attempt_detail_view, name="attempt"),
    path("attempts/<int:pk>/exclude/", views.exclusion_new, name="exclude"),
]

api_urlpatterns = [
    path("evaluands", apis.EvaluandListApi.as_view(), name="evaluands"),
    path("evaluands/create", apis.EvaluandCreateApi.as_view(), name="evaluand-create"),
    path("evaluands/<int:pk>", apis.EvaluandDetailApi.as_view(), name="evaluand"),
    path("evaluands/<int:pk>/revise", apis.EvaluandReviseApi.as_view(), name="evaluand-revise"),
    path("versions/<int:version_id>/roster", apis.RosterListApi.as_view(), name="roster"),
    path(
        "versions/<int:version_id>/roster/enroll",
        apis.RosterEnrollApi.as_view(),
        name="roster-enroll",
    ),
    path(
        "versions/<int:version_id>/roster/<str:code>/remove",
        apis.RosterRemoveApi.as_view(),
        name="roster-remove",
    ),
    path(
        "versions/<int:version_id>/responses/summary",
        apis.ResponsesSummaryApi.as_view(),
        name="responses-summary",
    ),
    path(
        "versions/<int:version_id>/responses/import",
        apis.ResponsesImportApi.as_view(),
        name="responses-import",
    ),
    path(
        "versions/<int:version_id>/responses/imports",
        apis.ImportListApi.as_view(),
        name="imports",
    ),
    path("versions/<int:version_id>/attempts", apis.AttemptListApi.as_view(), name="attempts"),
    path("attempts/<int:pk>", apis.AttemptDetailApi.as_view(), name="attempt"),
    path("attempts/<int:pk>/exclude", apis.ExclusionCreateApi.as_view(), name="exclude"),
    path(
        "versions/<int:version_id>/exclusions",
        apis.ExclusionListApi.as_view(),
        name="exclusions",
    ),
]
