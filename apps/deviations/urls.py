from django.urls import path

from apps.deviations import apis, views

app_name = "deviations"

urlpatterns = [
    path("logs/", views.log_index, name="index"),
    path("logs/verify_log.py", views.offline_verifier, name="offline-verifier"),
    path("logs/signing-key", views.signing_key_view, name="signing-key"),
    path(
        "protocols/<str:code>/log/checkpoint.json",
        views.checkpoint_download,
        name="checkpoint-download",
    ),
    path("protocols/<str:code>/log/", views.protocol_log, name="log"),
    path("protocols/<str:code>/log.jsonl", views.log_export_jsonl, name="export-jsonl"),
    path("protocols/<str:code>/log.csv", views.log_export_csv, name="export-csv"),
    path("protocols/<str:code>/deviations/new/", views.deviation_new, name="deviation-new"),
    path("versions/<int:pk>/unseal/", views.version_unseal, name="unseal"),
]

api_urlpatterns = [
    path("protocols/<str:code>/log", apis.LogFeedApi.as_view(), name="log"),
    path("protocols/<str:code>/log/verify", apis.LogVerifyApi.as_view(), name="log-verify"),
    path(
        "protocols/<str:code>/log/checkpoints",
        apis.CheckpointListCreateApi.as_view(),
        name="log-checkpoints",
    ),
    path("protocols/<str:code>/deviations", apis.DeviationCreateApi.as_view(), name="deviations"),
    path("versions/<int:pk>/seal", apis.SealApi.as_view(), name="seal"),
    path("versions/<int:pk>/unseal", apis.UnsealApi.as_view(), name="unseal"),
]
