"""The gateway: a running ``Host``'s catalog served as one MCP server (stdio or streamable HTTP).

``Gateway(host)`` serves every server's tools, resources and prompts (or one profile's) to
other MCP clients, passing requests, notifications and errors through both ways.
"""

from mcpdeck.gateway._event_store import MemoryEventStore
from mcpdeck.gateway._gateway import Gateway, GatewayToken
from mcpdeck.gateway._http import GatewayApp

__all__ = ["Gateway", "GatewayApp", "GatewayToken", "MemoryEventStore"]
