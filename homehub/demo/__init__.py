"""Demo mode (`manage.py serve --demo`, `make demo`): the hub with simulated ESP32 agents over
WebSocket and MQTT that publish a plausible home climate and answer tool calls."""
