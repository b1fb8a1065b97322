"""Stock xiaozhi devices in the admin: their check-ins and bindings, read-only; unbinding (the
device's token revoked) through the services, audited as `admin`."""

from django.contrib import admin, messages

from audit.models import Event
from devices.xiaozhi import services
from devices.xiaozhi.models import Activation


@admin.register(Activation)
class ActivationAdmin(admin.ModelAdmin):
    list_display = [
        "device_id",
        "state",
        "board_name",
        "firmware_version",
        "created_at",
        "bound_at",
        "unbound_at",
    ]
    list_filter = ["bound_at", "unbound_at"]
    search_fields = ["device_id", "client_id", "serial_number"]
    actions = ["unbind"]
    # The code is the device's proof that its owner holds it: not shown here.
    exclude = ["code"]

    @admin.display(description="State")
    def state(self, row: Activation) -> str:
        return row.state

    @admin.display(description="Board")
    def board_name(self, row: Activation) -> str:
        return row.board.get("name") or row.board.get("type") or ""

    @admin.display(description="Firmware")
    def firmware_version(self, row: Activation) -> str:
        return row.firmware.get("version", "")

    def get_readonly_fields(self, request, obj=None):
        return [field.name for field in Activation._meta.fields if field.name != "code"]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False  # unbinding keeps the record; expired codes are deleted by the hub

    @admin.action(description="Unbind selected devices (their device tokens are revoked)")
    def unbind(self, request, queryset):
        actor = request.user.get_username()
        device_ids = set(queryset.values_list("device_id", flat=True))
        count = sum(
            services.unbind(d, actor=actor, interface=Event.Interface.ADMIN) for d in sorted(device_ids)
        )
        self.message_user(request, f"{count} device(s) unbound.", messages.SUCCESS)
