from django.contrib.auth import views as auth_views
from django.urls import path

from apps.accounts import apis, views

app_name = "accounts"

urlpatterns = [
    path("", views.home, name="home"),
    path(
        "login/",
        auth_views.LoginView.as_view(
            template_name="accounts/login.html", redirect_authenticated_user=True
        ),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("account/token/", views.api_token, name="api-token"),
]

api_urlpatterns = [
    path("me", apis.MeApi.as_view(), name="me"),
]
