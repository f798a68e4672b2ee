from django.urls import path

from apps.protocols.addressing import API_PREFIX, PAGE_PREFIX
from apps.registry import apis, views

app_name = "registry"

_P = "r/<str:code>/"
_V = "r/<str:code>/<str:label>/"
_PI = "protocols/<str:code>/"

# "_view" and "_tools" cannot be protocol codes (a code starts with a letter or digit), so
# these addresses never shadow a protocol's pages.
urlpatterns = [
    path("r/", views.index, name="index"),
    path("r/feed.atom", views.RegistryFeed(), name="feed"),
    path("r/signing-key.json", views.signing_key, name="signing-key"),
    path("r/_tools/<str:name>", views.verifier_file, name="verifier"),
    path("r/_view/<str:token>/", views.view_link_page, name="view-link"),
    path("r/_view/<str:token>/document.json", views.view_link_document, name="view-link-document"),
    path(_P, views.protocol_page, name="protocol"),
    path(_P + "log.jsonl", views.log_download, name="log"),
    path(_P + "checkpoints.json", views.checkpoints_download, name="checkpoints"),
    path(_V, views.version_page, name="version"),
    path(_V + "document.json", views.version_document, name="document"),
    path(_V + "<str:fmt>", views.version_citation, name="citation"),
    path(_V + "runs/<int:number>/", views.run_page, name="run"),
    path(_V + "runs/<int:number>/result.json", views.run_result, name="run-result"),
    path(_V + "runs/<int:number>/tidy.csv", views.run_tidy, name="run-tidy"),
    # The PI's side.
    path(_PI + "publish/", views.publish_page, name="publish"),
    path(PAGE_PREFIX + "publish/", views.publish_action, name="publish-version"),
    path(PAGE_PREFIX + "embargo/end/", views.embargo_end_action, name="embargo-end"),
    path(PAGE_PREFIX + "view-links/", views.view_link_create_action, name="view-link-new"),
    path(
        _PI + "view-links/<int:pk>/revoke/", views.view_link_revoke_action, name="view-link-revoke"
    ),
    path(
        PAGE_PREFIX + "analysis/<int:number>/publish/", views.run_publish_action, name="run-publish"
    ),
]

_API = "registry/protocols/<str:code>"

api_urlpatterns = [
    path("registry/protocols", apis.PublicProtocolListApi.as_view(), name="protocols"),
    path(_API, apis.PublicProtocolApi.as_view(), name="protocol"),
    path(_API + "/log", apis.PublicLogApi.as_view(), name="log"),
    path(_API + "/versions/<str:label>", apis.PublicVersionApi.as_view(), name="version"),
    path(
        _API + "/versions/<str:label>/datacite",
        apis.PublicDataciteApi.as_view(),
        name="datacite",
    ),
    path(
        _API + "/versions/<str:label>/runs/<int:number>",
        apis.PublicRunApi.as_view(),
        name="run",
    ),
    # The PI's writes (signed in, PI role).
    path(API_PREFIX + "publication", apis.PublishApi.as_view(), name="publish"),
    path(API_PREFIX + "publication/end-embargo", apis.EmbargoEndApi.as_view(), name="embargo-end"),
    path("protocols/<str:code>/view-links", apis.ViewLinkCreateApi.as_view(), name="view-links"),
    path(
        "protocols/<str:code>/view-links/<int:pk>/revoke",
        apis.ViewLinkRevokeApi.as_view(),
        name="view-link-revoke",
    ),
]
