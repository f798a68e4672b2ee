from django.urls import path

from apps.studies.crucible import apis, views

urlpatterns = [
    path(
        "protocols/<str:code>/v/<str:label>/crucible-manifest/",
        views.crucible_manifest_page,
        name="crucible-manifest",
    ),
]

api_urlpatterns = [
    path(
        "protocols/<str:code>/versions/<str:label>/crucible-manifest",
        apis.CrucibleManifestApi.as_view(),
        name="crucible-manifest",
    ),
]
