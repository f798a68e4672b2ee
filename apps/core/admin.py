from django.contrib import admin


class ReadOnlyAdmin(admin.ModelAdmin):
    """Admin pages that show records and offer no way to add, change or delete them."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
