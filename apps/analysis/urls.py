from django.urls import path  # noqa: F401

app_name = "analysis"

urlpatterns: list = []
api_urlpatterns: list = []
