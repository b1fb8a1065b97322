"""The MCP client the hub uses to talk to devices, whatever carries the messages."""
