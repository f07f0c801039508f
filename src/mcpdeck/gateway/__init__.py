"""The gateway: a running ``Host``'s catalog served as one MCP server (stdio or streamable HTTP)."""

from mcpdeck.gateway._event_store import MemoryEventStore

__all__ = ["MemoryEventStore"]
