"""Admin helpers any app may use."""

from django.contrib import admin


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows a process keeps (the MQTT worker's, say): looked at in the admin, never added or
    edited there (deleting stays allowed: a refused message is deleted once read)."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
