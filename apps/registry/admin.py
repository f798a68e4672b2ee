"""Read-only admin views of the registry: publications are changed only by the services (and,
once public, by nothing at all)."""

from django.contrib import admin

from apps.core.admin import ReadOnlyAdmin
from apps.registry.models import Publication, RunPublication, ViewLink

admin.site.register(
    Publication,
    ReadOnlyAdmin,
    list_display=("version", "published_at", "embargo_until", "public_since"),
)
admin.site.register(
    ViewLink,
    ReadOnlyAdmin,
    list_display=("version", "anonymised", "created_at", "first_used_at", "revoked_at"),
    exclude=("token",),
)
admin.site.register(RunPublication, ReadOnlyAdmin, list_display=("run", "published_at"))
