"""Stock xiaozhi devices over MQTT: credentials, the device listener (an embedded broker) and
their device link. docs/MQTT.md#xiaozhi-devices-over-mqtt."""
