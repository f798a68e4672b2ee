from django.urls import path

from apps.protocols import views

app_name = "protocols"

urlpatterns = [
    path("protocols/", views.protocol_list, name="list"),
    path("protocols/new/", views.protocol_new, name="new"),
]

api_urlpatterns: list = []
