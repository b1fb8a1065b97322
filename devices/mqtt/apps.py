from django.apps import AppConfig


class MqttConfig(AppConfig):
    name = "devices.mqtt"
    label = "mqtt"
    verbose_name = "MQTT workers"
