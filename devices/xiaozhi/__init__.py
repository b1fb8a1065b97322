"""Stock xiaozhi devices (seed 001), everything about them: OTA and pairing, the WebSocket door,
the MQTT mode (`mqtt/`) and the simulators. docs/XIAOZHI.md."""
