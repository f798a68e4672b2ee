"""Every URL of Preregistry. Each app's ``urls.py`` gives its pages (``urlpatterns``) and its API
(``api_urlpatterns``, mounted under ``/api/v1/``)."""

from importlib import import_module

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from apps.core.docs import docs_image, docs_page
from apps.core.views import healthz

handler500 = "apps.core.views.server_error"

APPS = (
    "accounts",
    "protocols",
    "items",
    "responses",
    "raters",
    "deviations",
    "analysis",
    "studies",
    "registry",
)


def _api(app: str):
    return import_module(f"apps.{app}.urls").api_urlpatterns


urlpatterns = [
    path("healthz", healthz, name="healthz"),
    # The project's docs/ as pages (apps/core/docs.py): what "see docs/…" links to.
    path("docs/img/<str:name>", docs_image, name="docs-image"),
    path("docs/<str:slug>/", docs_page, name="docs-page"),
    # The reviewer queue's two hottest routes (next, score) first: Django resolves a URL by
    # walking the patterns in order, and these are asked for many times a second.
    path(
        "api/v1/",
        include(
            (import_module("apps.raters.urls").api_hot_urlpatterns, "raters"),
            namespace="raters-hot-api",
        ),
    ),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves Swagger UI's start-up script as a file of its own (…?script), so the
    # page runs under the site's CSP, which allows no inline script.
    path(
        "api/schema/ui/",
        SpectacularSwaggerSplitView.as_view(
            url_name="schema", template_name="core/swagger_ui.html"
        ),
        name="schema-ui",
    ),
    *[path("api/v1/", include((_api(app), app), namespace=f"{app}-api")) for app in APPS],
    *[path("", include(f"apps.{app}.urls")) for app in APPS],
]
