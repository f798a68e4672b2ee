from collections.abc import Callable

from django.http import HttpResponse
from django.urls import path

from apps.protocols.addressing import API_PREFIX as _AV
from apps.protocols.addressing import PAGE_PREFIX as _V
from apps.protocols.addressing import api_legacy_redirect, by_label, legacy_redirect
from apps.raters import apis, machine_apis, machine_views, rubric_text_apis, views

app_name = "raters"

# A version's pages and API are addressed by protocol code + version label
# (apps/protocols/addressing.py). The old ``versions/<id>/…`` page routes redirect there (one
# release); the old API routes, ``…-by-id``, redirect (308) there and are deprecated.
_SCORER = {"scorer": "code"}  # the route's scorer code → the view's ``code``
_VERSION_PAGES: list[tuple[str, Callable[..., HttpResponse], str]] = [
    ("rubric/", views.rubric, "rubric"),
    ("rubric/fields/<slug:name>/", views.rubric_field, "rubric-field"),
    ("rubric/preview/", views.rubric_preview, "rubric-preview"),
    ("scoring/", views.scoring, "scoring"),
    ("scorers/", machine_views.scorers, "scorers"),
    ("scorers/import/", machine_views.machine_import, "machine-import"),
    ("scorers/import/confirm/", machine_views.machine_import_confirm, "machine-import-confirm"),
    ("scorers/<str:scorer>/oracle-run/", machine_views.oracle_run, "oracle-run"),
    ("rubric/text/publish/", views.rubric_text_publish_action, "rubric-text-publish"),
]

urlpatterns = [
    path("queue/", views.queue, name="queue"),
    path("queue/next/", views.queue_next, name="queue-next"),
    path("tasks/<str:token>/", views.task, name="task"),
    path("tasks/<str:token>/correct/", views.task_correct, name="task-correct"),
    path("tasks/<str:token>/skip/", views.task_skip_action, name="task-skip"),
    *[
        path(_V + tail, by_label(view, rename=_SCORER), name=name)
        for tail, view, name in _VERSION_PAGES
    ],
    *[
        path(
            f"versions/<int:version_id>/{tail.replace('<str:scorer>', '<str:code>')}",
            legacy_redirect(f"raters:{name}", rename={"code": "scorer"}),
        )
        for tail, _view, name in _VERSION_PAGES
    ],
]

# Mounted first of all routes by config/urls.py (and again below, under the app's namespace).
api_hot_urlpatterns = [
    path("tasks/next", apis.TaskNextApi.as_view(), name="task-next"),
    path("tasks/<str:token>/score", apis.TaskScoreApi.as_view(), name="task-score"),
]

_VERSION_APIS = [
    ("rubric", apis.RubricApi, "rubric"),
    ("rubric/template", apis.RubricTemplateApi, "rubric-template"),
    ("rubric/fields", apis.RubricFieldsApi, "rubric-fields"),
    ("rubric/fields/<slug:name>", apis.RubricFieldApi, "rubric-field"),
    ("scoring/open", apis.ScoringOpenApi, "scoring-open"),
    ("scoring", apis.ScoringDashboardApi, "scoring"),
    ("scoring/final", apis.FinalScoresApi, "scoring-final"),
    ("scorers", machine_apis.ScorerRosterApi, "scorers"),
    ("scorers/enroll", machine_apis.ScorerEnrollApi, "scorer-enroll"),
    ("scorers/<str:scorer>/oracle-runs", machine_apis.OracleRunApi, "oracle-runs"),
    ("machine-scores/import", machine_apis.MachineScoresImportApi, "machine-scores-import"),
    ("machine-scores", machine_apis.MachineDashboardApi, "machine-scores"),
]

api_urlpatterns = [
    path("tasks/next", apis.TaskNextApi.as_view(), name="task-next"),
    path("tasks/progress", apis.TaskProgressApi.as_view(), name="task-progress"),
    path("tasks/queues", apis.TaskQueuesApi.as_view(), name="task-queues"),
    path("tasks/<str:token>", apis.TaskDetailApi.as_view(), name="task"),
    path("tasks/<str:token>/score", apis.TaskScoreApi.as_view(), name="task-score"),
    path("tasks/<str:token>/correction", apis.TaskCorrectionApi.as_view(), name="task-correction"),
    path("tasks/<str:token>/skip", apis.TaskSkipApi.as_view(), name="task-skip"),
    *[
        path(_AV + tail, by_label(cls.as_view(), rename=_SCORER), name=name)
        for tail, cls, name in _VERSION_APIS
    ],
    # Deprecated: the same resources by the version's database id redirect (308) there.
    *[
        path(
            f"versions/<int:version_id>/{tail.replace('<str:scorer>', '<str:code>')}",
            api_legacy_redirect(f"raters-api:{name}", cls, rename={"code": "scorer"}),
            name=f"{name}-by-id",
        )
        for tail, cls, name in _VERSION_APIS
    ],
    # The rubric's own text (any rubric's; seed 003's first) at its content address.
    path(_AV + "rubric/text", rubric_text_apis.RubricTextApi.as_view(), name="rubric-text"),
    path(
        _AV + "rubric/text/publish",
        rubric_text_apis.RubricTextPublishApi.as_view(),
        name="rubric-text-publish",
    ),
]
