from django.urls import path

from apps.raters import apis, fidelity_apis, machine_apis, machine_views, views

app_name = "raters"

urlpatterns = [
    path("queue/", views.queue, name="queue"),
    path("queue/next/", views.queue_next, name="queue-next"),
    path("tasks/<str:token>/", views.task, name="task"),
    path("tasks/<str:token>/correct/", views.task_correct, name="task-correct"),
    path("versions/<int:version_id>/rubric/", views.rubric, name="rubric"),
    path(
        "versions/<int:version_id>/rubric/fields/<slug:name>/",
        views.rubric_field,
        name="rubric-field",
    ),
    path("versions/<int:version_id>/scoring/", views.scoring, name="scoring"),
    path("versions/<int:version_id>/scorers/", machine_views.scorers, name="scorers"),
    path(
        "versions/<int:version_id>/scorers/import/",
        machine_views.machine_import,
        name="machine-import",
    ),
    path(
        "versions/<int:version_id>/scorers/import/confirm/",
        machine_views.machine_import_confirm,
        name="machine-import-confirm",
    ),
    path(
        "versions/<int:version_id>/scorers/<str:code>/oracle-run/",
        machine_views.oracle_run,
        name="oracle-run",
    ),
]

# Mounted first of all routes by config/urls.py (and again below, under the app's namespace).
api_hot_urlpatterns = [
    path("tasks/next", apis.TaskNextApi.as_view(), name="task-next"),
    path("tasks/<str:token>/score", apis.TaskScoreApi.as_view(), name="task-score"),
]

api_urlpatterns = [
    path("tasks/next", apis.TaskNextApi.as_view(), name="task-next"),
    path("tasks/progress", apis.TaskProgressApi.as_view(), name="task-progress"),
    path("tasks/queues", apis.TaskQueuesApi.as_view(), name="task-queues"),
    path("tasks/<str:token>", apis.TaskDetailApi.as_view(), name="task"),
    path("tasks/<str:token>/score", apis.TaskScoreApi.as_view(), name="task-score"),
    path("tasks/<str:token>/correction", apis.TaskCorrectionApi.as_view(), name="task-correction"),
    path("versions/<int:version_id>/rubric", apis.RubricApi.as_view(), name="rubric"),
    path(
        "versions/<int:version_id>/rubric/template",
        apis.RubricTemplateApi.as_view(),
        name="rubric-template",
    ),
    path(
        "versions/<int:version_id>/rubric/fields",
        apis.RubricFieldsApi.as_view(),
        name="rubric-fields",
    ),
    path(
        "versions/<int:version_id>/rubric/fields/<slug:name>",
        apis.RubricFieldApi.as_view(),
        name="rubric-field",
    ),
    path(
        "versions/<int:version_id>/scoring/open", apis.ScoringOpenApi.as_view(), name="scoring-open"
    ),
    path("versions/<int:version_id>/scoring", apis.ScoringDashboardApi.as_view(), name="scoring"),
    path(
        "versions/<int:version_id>/scoring/final",
        apis.FinalScoresApi.as_view(),
        name="scoring-final",
    ),
    path(
        "versions/<int:version_id>/scorers",
        machine_apis.ScorerRosterApi.as_view(),
        name="scorers",
    ),
    path(
        "versions/<int:version_id>/scorers/enroll",
        machine_apis.ScorerEnrollApi.as_view(),
        name="scorer-enroll",
    ),
    path(
        "versions/<int:version_id>/scorers/<str:code>/oracle-runs",
        machine_apis.OracleRunApi.as_view(),
        name="oracle-runs",
    ),
    path(
        "versions/<int:version_id>/machine-scores/import",
        machine_apis.MachineScoresImportApi.as_view(),
        name="machine-scores-import",
    ),
    path(
        "versions/<int:version_id>/machine-scores",
        machine_apis.MachineDashboardApi.as_view(),
        name="machine-scores",
    ),
    # Seed 003: the rubric's text at its content address.
    path(
        "protocols/<str:code>/versions/<str:label>/rubric/text",
        fidelity_apis.RubricTextApi.as_view(),
        name="rubric-text",
    ),
    path(
        "protocols/<str:code>/versions/<str:label>/rubric/text/publish",
        fidelity_apis.RubricTextPublishApi.as_view(),
        name="rubric-text-publish",
    ),
]
