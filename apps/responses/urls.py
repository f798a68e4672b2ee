from django.urls import path  # noqa: F401

app_name = "responses"

urlpatterns: list = []
api_urlpatterns: list = []
