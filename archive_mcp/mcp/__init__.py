"""The MCP face: tools, resources and prompts over the `Archive` API."""
