from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from apps.accounts.models import Membership, User

admin.site.register(User, UserAdmin)


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ("user", "protocol", "role", "created_at")
    list_filter = ("role",)
    search_fields = ("user__username", "protocol__code")
