"""What carries MCP: stdio, seed 000's lines, Streamable HTTP, WebSocket, outbound endpoints."""
