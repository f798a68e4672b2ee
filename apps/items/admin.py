"""The design in the admin: to look at, never to change (writes go through the services, and a
frozen version's rows are guarded by the database)."""

from django.contrib import admin

from apps.core.admin import ReadOnlyAdmin
from apps.items.models import Cell, Condition, Factor, Family, HarmReview, Item, KeyUnit, Level


@admin.register(Level)
class LevelAdmin(ReadOnlyAdmin):
    list_display = ("version", "ordinal", "code", "name")


@admin.register(Family)
class FamilyAdmin(ReadOnlyAdmin):
    list_display = ("version", "code", "name", "role", "max_level")


@admin.register(Condition)
class ConditionAdmin(ReadOnlyAdmin):
    list_display = ("version", "code", "name", "is_sham")


@admin.register(Factor)
class FactorAdmin(ReadOnlyAdmin):
    list_display = ("version", "name", "role")


@admin.register(Item)
class ItemAdmin(ReadOnlyAdmin):
    list_display = ("version", "code", "family", "domain", "condition")
    search_fields = ("code", "domain")


@admin.register(Cell)
class CellAdmin(ReadOnlyAdmin):
    list_display = ("version", "item", "level", "absent")


@admin.register(KeyUnit)
class KeyUnitAdmin(ReadOnlyAdmin):
    list_display = ("version", "cell", "position", "executable")


@admin.register(HarmReview)
class HarmReviewAdmin(ReadOnlyAdmin):
    list_display = ("version", "item", "cycle", "round", "reviewer", "verdict", "submitted_at")
