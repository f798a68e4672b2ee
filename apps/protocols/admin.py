from django.contrib import admin

from apps.core.admin import ReadOnlyAdmin
from apps.protocols.models import AnalysisParameter, Blob, Protocol, ProtocolVersion, Withdrawal


def code_is_frozen(protocol: Protocol) -> bool:
    """Whether the protocol's code may no longer change: it has a version that is not a draft, or
    a deviation log, whose entries carry the code (PostgreSQL refuses the change as well)."""
    return (
        protocol.versions.exclude(state="draft").exists()
        or protocol.log_entries.exists()  # reverse relation of deviations.LogEntry
    )


@admin.register(Protocol)
class ProtocolAdmin(admin.ModelAdmin):
    list_display = ("code", "title", "template", "created_at")
    search_fields = ("code", "title")

    def get_readonly_fields(self, request, obj=None):
        fields = tuple(super().get_readonly_fields(request, obj))
        if obj is not None and code_is_frozen(obj):
            fields += ("code",)
        if obj is not None and obj.versions.exclude(state="draft").exists():
            fields += ("title", "template")  # in every frozen version's canonical document
        return fields


admin.site.register(
    ProtocolVersion,
    ReadOnlyAdmin,
    list_display=("protocol", "label", "state", "frozen_at", "sha256"),
    list_filter=("state",),
)
admin.site.register(
    AnalysisParameter, ReadOnlyAdmin, list_display=("version", "name", "kind", "value", "required")
)
admin.site.register(
    Blob, ReadOnlyAdmin, list_display=("sha256", "media_type", "size", "created_at")
)
admin.site.register(
    Withdrawal, ReadOnlyAdmin, list_display=("version", "withdrawn_by", "withdrawn_at")
)
