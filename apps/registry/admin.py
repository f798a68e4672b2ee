"""Read-only admin views of the registry: publications are changed only by the services (and,
once public, by nothing at all)."""

from django.contrib import admin

from apps.registry.models import Publication, RunPublication, ViewLink


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Publication)
class PublicationAdmin(ReadOnlyAdmin):
    list_display = ("version", "published_at", "embargo_until", "public_since")


@admin.register(ViewLink)
class ViewLinkAdmin(ReadOnlyAdmin):
    list_display = ("version", "anonymised", "created_at", "first_used_at", "revoked_at")
    exclude = ("token",)


@admin.register(RunPublication)
class RunPublicationAdmin(ReadOnlyAdmin):
    list_display = ("run", "published_at")
