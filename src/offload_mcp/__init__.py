"""offload-mcp: an MCP proxy that shapes tool results so the model pays only for
the bytes it needs, and can recall every other byte exactly."""

__version__ = "0.1.0"
