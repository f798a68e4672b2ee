"""The design in the admin: to look at, never to change (writes go through the services, and a
frozen version's rows are guarded by the database)."""

from django.contrib import admin

from apps.core.admin import ReadOnlyAdmin
from apps.items.models import Cell, Condition, Factor, Family, HarmReview, Item, KeyUnit, Level

admin.site.register(Level, ReadOnlyAdmin, list_display=("version", "ordinal", "code", "name"))
admin.site.register(
    Family, ReadOnlyAdmin, list_display=("version", "code", "name", "role", "max_level")
)
admin.site.register(Condition, ReadOnlyAdmin, list_display=("version", "code", "name", "is_sham"))
admin.site.register(Factor, ReadOnlyAdmin, list_display=("version", "name", "role"))
admin.site.register(
    Item,
    ReadOnlyAdmin,
    list_display=("version", "code", "family", "domain", "condition"),
    search_fields=("code", "domain"),
)
admin.site.register(Cell, ReadOnlyAdmin, list_display=("version", "item", "level", "absent"))
admin.site.register(
    KeyUnit, ReadOnlyAdmin, list_display=("version", "cell", "position", "executable")
)
admin.site.register(
    HarmReview,
    ReadOnlyAdmin,
    list_display=("version", "item", "cycle", "round", "reviewer", "verdict", "submitted_at"),
)
