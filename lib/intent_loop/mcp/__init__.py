"""The MCP server Codex starts next to the hooks: the agent's side of intent-loop."""
