"""Outbound MCP endpoints: their rows and secret URLs, the socket the hub opens, its supervisor."""
