from django.urls import path

from apps.studies.paired_blocks import apis, views

urlpatterns = [
    path("protocols/<str:code>/v/<str:label>/fixtures/", views.fixtures, name="fixtures"),
]

api_urlpatterns = [
    path(
        "protocols/<str:code>/versions/<str:label>/fixtures",
        apis.RouteFixturesApi.as_view(),
        name="route-fixtures",
    ),
]
