from django.contrib.auth.models import AbstractUser
from django.core.exceptions import ValidationError
from django.db import models


class User(AbstractUser):
    """A person using Preregistry. What they may do is given per protocol by ``Membership``."""

    class Meta:
        db_table = "accounts_user"


class Role(models.TextChoices):
    PI = "pi", "PI"
    EDITOR = "editor", "Editor"
    REVIEWER = "reviewer", "Reviewer"
    AUDITOR = "auditor", "Auditor"


class Membership(models.Model):
    """One role a user holds on one protocol. A user may hold several roles on a protocol."""

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="memberships")
    protocol = models.ForeignKey(
        "protocols.Protocol", on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "protocol", "role"], name="membership_unique_role"
            )
        ]
        indexes = [models.Index(fields=["protocol", "role"])]

    def __str__(self) -> str:
        return f"{self.user} is {self.get_role_display()} on {self.protocol_id}"

    def clean(self) -> None:
        # Also guards the admin, which saves through full_clean, not through the services.
        from apps.accounts.selectors import blinding_conflict

        if self.pk is None and self.user_id and self.protocol_id:
            conflict = blinding_conflict(
                user_id=self.user_id, protocol_id=self.protocol_id, role=self.role
            )
            if conflict:
                raise ValidationError({"role": [conflict]})
