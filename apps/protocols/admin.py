from django.contrib import admin

from apps.core.admin import ReadOnlyAdmin
from apps.protocols.models import AnalysisParameter, Blob, Protocol, ProtocolVersion, Withdrawal


@admin.register(Protocol)
class ProtocolAdmin(admin.ModelAdmin):
    list_display = ("code", "title", "template", "created_at")
    search_fields = ("code", "title")


@admin.register(ProtocolVersion)
class ProtocolVersionAdmin(ReadOnlyAdmin):
    list_display = ("protocol", "label", "state", "frozen_at", "sha256")
    list_filter = ("state",)


@admin.register(AnalysisParameter)
class AnalysisParameterAdmin(ReadOnlyAdmin):
    list_display = ("version", "name", "kind", "value", "required")


@admin.register(Blob)
class BlobAdmin(ReadOnlyAdmin):
    list_display = ("sha256", "media_type", "size", "created_at")


@admin.register(Withdrawal)
class WithdrawalAdmin(ReadOnlyAdmin):
    list_display = ("version", "withdrawn_by", "withdrawn_at")
