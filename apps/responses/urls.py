from django.urls import path

from apps.protocols.addressing import API_PREFIX as _AV
from apps.protocols.addressing import PAGE_PREFIX as _V
from apps.responses import apis, views

app_name = "responses"

# A version's pages live under its protocol, as the design's do: /protocols/OPB-01/v/1.1/…
# (apps/protocols/addressing.py).
_A = _V + "attempts/<int:position>/<int:number>/"

urlpatterns = [
    path("evaluands/", views.evaluand_list, name="evaluands"),
    path("evaluands/new/", views.evaluand_new, name="evaluand-new"),
    path("evaluands/<int:pk>/", views.evaluand_detail, name="evaluand"),
    path("evaluands/<int:pk>/revise/", views.evaluand_revise_view, name="evaluand-revise"),
    path(
        "evaluands/<int:pk>/fresh-session/",
        views.evaluand_fresh_session,
        name="evaluand-fresh-session",
    ),
    path(_V + "roster/", views.roster, name="roster"),
    path(_V + "roster/<str:entry>/remove/", views.roster_remove_view, name="roster-remove"),
    path(_V + "responses/", views.responses_page, name="responses"),
    path(_V + "responses/import/", views.import_upload, name="import"),
    path(_V + "responses/import/confirm/", views.import_confirm, name="import-confirm"),
    path(_V + "responses/imports/", views.import_history, name="imports"),
    path(_V + "attempts/", views.attempt_list, name="attempts"),
    path(_A, views.attempt_detail_view, name="attempt"),
    path(_A + "exclude/", views.exclusion_new, name="exclude"),
    path(_V + "control-validations/", views.control_validations, name="control-validations"),
]

_AA = _AV + "attempts/<int:position>/<int:number>"

api_urlpatterns = [
    path("evaluands", apis.EvaluandListApi.as_view(), name="evaluands"),
    path("evaluands/create", apis.EvaluandCreateApi.as_view(), name="evaluand-create"),
    path("evaluands/<int:pk>", apis.EvaluandDetailApi.as_view(), name="evaluand"),
    path("evaluands/<int:pk>/revise", apis.EvaluandReviseApi.as_view(), name="evaluand-revise"),
    path(
        "evaluands/<int:pk>/fresh-session",
        apis.SessionGuaranteeRecordApi.as_view(),
        name="evaluand-fresh-session",
    ),
    path(_AV + "roster", apis.RosterListApi.as_view(), name="roster"),
    path(_AV + "roster/enroll", apis.RosterEnrollApi.as_view(), name="roster-enroll"),
    path(_AV + "roster/<str:entry>/remove", apis.RosterRemoveApi.as_view(), name="roster-remove"),
    path(_AV + "responses/summary", apis.ResponsesSummaryApi.as_view(), name="responses-summary"),
    path(_AV + "responses/import", apis.ResponsesImportApi.as_view(), name="responses-import"),
    path(_AV + "responses/imports", apis.ImportListApi.as_view(), name="imports"),
    path(_AV + "attempts", apis.AttemptListApi.as_view(), name="attempts"),
    path(_AA, apis.AttemptDetailApi.as_view(), name="attempt"),
    path(_AA + "/exclude", apis.ExclusionCreateApi.as_view(), name="exclude"),
    path(_AV + "exclusions", apis.ExclusionListApi.as_view(), name="exclusions"),
    path(
        _AV + "control-validations",
        apis.ControlValidationListApi.as_view(),
        name="control-validations",
    ),
    path(
        _AV + "control-validations/record",
        apis.ControlValidationRecordApi.as_view(),
        name="control-validation-record",
    ),
]
