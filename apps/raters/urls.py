from django.urls import path

from apps.raters import views

app_name = "raters"

urlpatterns = [
    path("queue/", views.queue, name="queue"),
]
api_urlpatterns: list = []
