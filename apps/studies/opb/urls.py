from django.urls import path

from apps.studies.opb import views

# OPB-01 §6.1's human panel (issue #17)
urlpatterns = [
    path("protocols/<str:protocol_code>/v/<str:label>/panel/", views.panel, name="panel"),
    path(
        "protocols/<str:protocol_code>/v/<str:label>/panel/<str:code>/",
        views.panel_member,
        name="panel-member",
    ),
]
