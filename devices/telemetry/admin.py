"""Admin for telemetry: readings, sensors and refused messages, kept by the MQTT worker."""

from django.contrib import admin

from common.admin import ReadOnlyAdmin
from devices.telemetry.models import RejectedMessage, Sensor, TelemetryReading


@admin.register(TelemetryReading)
class TelemetryReadingAdmin(admin.ModelAdmin):
    list_display = ["measured_at", "zone", "device_type", "device_id", "channel", "value", "unit"]
    list_filter = ["zone", "device_type", "channel"]
    search_fields = ["device_id", "zone"]
    date_hierarchy = "measured_at"
    show_full_result_count = False


@admin.register(Sensor)
class SensorAdmin(ReadOnlyAdmin):
    list_display = ["zone", "device_type", "device_id", "channel", "value", "unit", "measured_at"]
    list_filter = ["zone", "device_type", "channel"]
    search_fields = ["device_id", "zone", "channel"]


@admin.register(RejectedMessage)
class RejectedMessageAdmin(ReadOnlyAdmin):
    list_display = ["received_at", "topic", "reason"]
    list_filter = ["reason"]
    search_fields = ["topic", "payload"]
    date_hierarchy = "received_at"
