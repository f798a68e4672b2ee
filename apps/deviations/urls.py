from django.urls import path

from apps.deviations import views

app_name = "deviations"

urlpatterns = [
    path("logs/", views.log_index, name="index"),
]
api_urlpatterns: list = []
