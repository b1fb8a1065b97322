"""Admin for the MQTT workers' reports."""

from django.contrib import admin

from common.admin import ReadOnlyAdmin
from devices.mqtt.models import MqttWorker


@admin.register(MqttWorker)
class MqttWorkerAdmin(ReadOnlyAdmin):
    list_display = ["client_id", "broker", "connected", "since", "reported_at"]
