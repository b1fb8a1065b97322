"""The MQTT worker (`manage.py mqtt_worker`): telemetry ingestion, MCP over MQTT for SOMS-style
agents (seed 004), and the home's state out / commands in. See docs/MQTT.md."""
