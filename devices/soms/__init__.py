"""SOMS devices (seed 004): ESP32 agents that speak MCP over MQTT on the hub's broker, their
link (`link.py`, carried by the MQTT worker) and a simulated agent (`simulator.py`)."""
