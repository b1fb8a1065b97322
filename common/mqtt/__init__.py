"""MQTT wire basics every MQTT door shares: broker settings and clients, and the topics."""
