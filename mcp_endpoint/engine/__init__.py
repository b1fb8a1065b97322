"""The MCP engine: JSON-RPC, protocol revisions, sessions, the tool registry, the call pipeline."""
