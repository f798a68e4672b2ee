from django.urls import path

from apps.deviations import apis, views
from apps.protocols.addressing import (
    API_PREFIX,
    PAGE_PREFIX,
    api_legacy_redirect,
    by_label,
    legacy_redirect,
)

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
    path(PAGE_PREFIX + "unseal/", by_label(views.version_unseal, kwarg="pk"), name="unseal"),
    # The old address by database id (one release): redirects to the one above.
    path("versions/<int:pk>/unseal/", legacy_redirect("deviations:unseal", kwarg="pk")),
]

api_urlpatterns = [
    path("protocols/<str:code>/log", apis.LogFeedApi.as_view(), name="log"),
    path("protocols/<str:code>/log/verify", apis.LogVerifyApi.as_view(), name="log-verify"),
    path(
        "protocols/<str:code>/log/checkpoints",
        apis.CheckpointListCreateApi.as_view(),
        name="log-checkpoints",
    ),
    path(
        "protocols/<str:code>/log/proof/inclusion",
        apis.InclusionProofApi.as_view(),
        name="log-inclusion-proof",
    ),
    path(
        "protocols/<str:code>/log/proof/consistency",
        apis.ConsistencyProofApi.as_view(),
        name="log-consistency-proof",
    ),
    path("protocols/<str:code>/deviations", apis.DeviationCreateApi.as_view(), name="deviations"),
    path(API_PREFIX + "seal", by_label(apis.SealApi.as_view(), kwarg="pk"), name="seal"),
    path(API_PREFIX + "unseal", by_label(apis.UnsealApi.as_view(), kwarg="pk"), name="unseal"),
    # Deprecated: the same by the version's database id redirect (308) there.
    path(
        "versions/<int:pk>/seal",
        api_legacy_redirect("deviations-api:seal", apis.SealApi, kwarg="pk"),
        name="seal-by-id",
    ),
    path(
        "versions/<int:pk>/unseal",
        api_legacy_redirect("deviations-api:unseal", apis.UnsealApi, kwarg="pk"),
        name="unseal-by-id",
    ),
]
