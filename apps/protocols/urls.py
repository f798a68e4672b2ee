from django.urls import path

from apps.protocols import apis, views
from apps.protocols.addressing import API_PREFIX
from apps.protocols.addressing import PAGE_PREFIX as _V

app_name = "protocols"

urlpatterns = [
    path("protocols/", views.protocol_list, name="list"),
    path("protocols/new/", views.protocol_new, name="new"),
    path("protocols/<str:code>/", views.protocol_detail, name="detail"),
    path("protocols/<str:code>/members/", views.protocol_members, name="members"),
    path("protocols/<str:code>/diff/", views.protocol_diff, name="diff"),
    path(_V, views.version_detail, name="version"),
    path(_V + "edit/", views.version_edit, name="edit"),
    path(_V + "autosave/", views.version_autosave, name="autosave"),
    path(_V + "checklist/", views.version_checklist, name="checklist"),
    path(_V + "decision-table/", views.version_decision_table, name="decision-table"),
    path(_V + "parameters/", views.version_parameter_add, name="parameter-add"),
    path(_V + "freeze/", views.version_freeze_action, name="freeze"),
    path(_V + "amend/", views.version_amend_action, name="amend"),
    path(_V + "withdraw/", views.version_withdraw_action, name="withdraw"),
    path(_V + "deposit/", views.version_deposit_action, name="deposit"),
    path(_V + "print/", views.version_print, name="print"),
    path(_V + "history/", views.version_history_page, name="history"),
]

# The version itself; its resources are below it.
_AV = API_PREFIX.removesuffix("/")

api_urlpatterns = [
    path("protocols", apis.ProtocolListCreateApi.as_view(), name="protocols"),
    path("protocols/<str:code>", apis.ProtocolDetailApi.as_view(), name="protocol"),
    path("protocols/<str:code>/members", apis.MemberListCreateApi.as_view(), name="members"),
    path(
        "protocols/<str:code>/members/remove",
        apis.MemberRemoveApi.as_view(),
        name="members-remove",
    ),
    path("protocols/<str:code>/versions", apis.VersionListApi.as_view(), name="versions"),
    path("protocols/<str:code>/diff", apis.VersionDiffApi.as_view(), name="diff"),
    path(_AV, apis.VersionDetailApi.as_view(), name="version"),
    path(_AV + "/gate", apis.VersionGateApi.as_view(), name="gate"),
    path(_AV + "/catalogue", apis.VersionCatalogueApi.as_view(), name="catalogue"),
    path(_AV + "/freeze", apis.VersionFreezeApi.as_view(), name="freeze"),
    path(_AV + "/amend", apis.VersionAmendApi.as_view(), name="amend"),
    path(_AV + "/withdraw", apis.VersionWithdrawApi.as_view(), name="withdraw"),
    path(_AV + "/deposit", apis.VersionDepositApi.as_view(), name="deposit"),
    path("blob/<str:digest>", apis.BlobApi.as_view(), name="blob"),
    path("pipelines", apis.PipelineListApi.as_view(), name="pipelines"),
]
