from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "apps.accounts"
    label = "accounts"
    verbose_name = "Accounts"

    def ready(self) -> None:
        # Connects the token cache's invalidation on revoke (a token deleted, a user saved).
        from apps.accounts import authentication  # noqa: F401
