"""The MCP adapter: tools for agents over the same core service."""
