from django.contrib import admin

from apps.core.admin import ReadOnlyAdmin
from apps.deviations.models import LogCheckpoint, LogEntry, OutcomeUnsealing

admin.site.register(
    LogEntry,
    ReadOnlyAdmin,
    list_display=("protocol", "seq", "kind", "actor_name", "recorded_at", "outcome_visible"),
    list_filter=("kind", "outcome_visible"),
    list_select_related=("protocol",),
)
admin.site.register(
    OutcomeUnsealing,
    ReadOnlyAdmin,
    list_display=("version", "unsealed_by", "unsealed_at"),
    list_select_related=("version__protocol", "unsealed_by"),
)
admin.site.register(
    LogCheckpoint,
    ReadOnlyAdmin,
    list_display=("protocol", "seq", "head_hash", "key_id", "signed_at"),
    list_select_related=("protocol",),
)
