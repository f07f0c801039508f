"""Built-in native tools over a ``Host``: list and read the connected servers' resources.

::

    tools = resource_tools(host)   # [list_mcp_resources, read_mcp_resource], both read-only

A model sees MCP tools in the catalog, but resources only through these two: one lists what
the servers offer (resources and URI templates), the other reads a URI. Both answer to the
host's permission gate: a listing leaves out what a ``deny`` rule covers (``mcp__s1`` denies
every resource of ``s1``), and each read is decided as ``mcp__<server>__resource:<uri>`` of the
server it would go to, asking the user when the rules say ``ask``, like a tool call.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Set

import mcp_types as types

from mcpdeck.agent._tools import NativeTool, ToolError, tool
from mcpdeck.errors import MCPDeckError, PermissionDeniedError, ResourceNotFoundError
from mcpdeck.host import Host
from mcpdeck.permissions import Access

__all__ = ["DEFAULT_MAX_LISTED", "resource_tools"]

DEFAULT_MAX_LISTED = 200
"""How many resources (and templates) ``list_mcp_resources`` shows at most."""


def _size(blob: str) -> str:
    try:
        raw = len(base64.b64decode(blob, validate=False))
    except (binascii.Error, ValueError):
        raw = len(blob) * 3 // 4
    return f"{raw / 1024:.1f} KB" if raw >= 1024 else f"{raw} bytes"


def _line(uri: str, server: str, name: str, title: str | None, mime: str | None, description: str | None) -> str:
    label = f"{name} ({title})" if title and title != name else name
    parts = [f"- {uri} [server: {server}] {label}"]
    if mime:
        parts.append(f"({mime})")
    line = " ".join(parts)
    if description:
        line += f": {' '.join(description.split())}"
    return line


def _servers_named(host: Host, server: str | None, only: Set[str] | None) -> Set[str] | None:
    if server is None:
        return only
    known = [name for name in host.servers if only is None or name in only]
    if server not in known:
        raise ToolError(f"no server named {server!r}; the servers are: {', '.join(sorted(known)) or 'none'}")
    return {server}


def resource_tools(
    host: Host, *, max_listed: int = DEFAULT_MAX_LISTED, servers: Set[str] | None = None
) -> list[NativeTool]:
    """The built-in resource tools over ``host``: ``list_mcp_resources`` and ``read_mcp_resource``.

    Both are read-only and read the host's state at each call, so they stay right as servers
    come and go.

    Args:
        host: An open host.
        max_listed: How many resources, and how many templates, a listing shows at most.
        servers: Only these servers' resources (default: every server's).
    """
    return [_list_tool(host, max_listed, servers), _read_tool(host, servers)]


def _list_tool(host: Host, max_listed: int, only: Set[str] | None) -> NativeTool:
    """``list_mcp_resources``: what the servers offer, less what a ``deny`` rule covers."""

    @tool(name="list_mcp_resources", read_only=True)
    async def list_mcp_resources(server: str | None = None) -> str:
        """List the resources (data such as files, records or documents) the connected MCP servers offer.

        Each line gives the resource's URI, its server, name, MIME type and description. URI
        templates ({variables} in braces) stand for many resources: fill the variables in to get
        a URI. Read one with read_mcp_resource.

        Args:
            server: Only this server's resources (default: every server's).
        """
        wanted = _servers_named(host, server, only)
        gate = host.permissions
        if server is not None and (refused := gate.denied(Access("resource", server, "*"))) is not None:
            raise ToolError(f"the resources of server {server!r} are not available: {refused.reason}")
        resources = [
            e
            for e in host.resources
            if (wanted is None or e.server in wanted) and gate.denied(Access("resource", e.server, e.uri)) is None
        ]
        templates = [
            e
            for e in host.resource_templates
            if (wanted is None or e.server in wanted)
            and gate.denied(Access("resource", e.server, e.uri_template)) is None
        ]
        if not resources and not templates:
            where = f"server {server!r} offers" if server is not None else "the connected servers offer"
            return f"No resources: {where} none."
        sections: list[list[str]] = []
        if resources:
            shown = [
                _line(r.uri, e.server, r.name, r.title, r.mime_type, r.description)
                for e in resources[:max_listed]
                for r in (e.resource,)
            ]
            sections.append(_section(f"Resources ({len(resources)}):", shown, len(resources)))
        if templates:
            shown = [
                _line(t.uri_template, e.server, t.name, t.title, t.mime_type, t.description)
                for e in templates[:max_listed]
                for t in (e.template,)
            ]
            heading = f"URI templates ({len(templates)}; fill in the {{variables}} to get a URI):"
            sections.append(_section(heading, shown, len(templates)))
        return "\n\n".join("\n".join(section) for section in sections)

    return list_mcp_resources


def _section(heading: str, lines: list[str], total: int) -> list[str]:
    """A listing's heading and lines, and a note on how many of ``total`` were left out."""
    if total > len(lines):
        return [heading, *lines, f"... and {total - len(lines)} more; give `server` to list one server's."]
    return [heading, *lines]


def _offering(host: Host, uri: str, only: Set[str]) -> str | None:
    """The one server of ``only`` that lists ``uri`` or a template it fits (None: none or several do)."""
    found = {e.server for e in host.resources if e.server in only and e.uri == uri}
    if not found:
        found = {e.server for e in host.resource_templates if e.server in only and e.matches(uri)}
    if not found and len(only) == 1:
        found = set(only)
    return found.pop() if len(found) == 1 else None


def _read_tool(host: Host, only: Set[str] | None) -> NativeTool:
    """``read_mcp_resource``: one URI read through the host, the gate deciding as for a tool call."""

    @tool(name="read_mcp_resource", read_only=True)
    async def read_mcp_resource(uri: str, server: str | None = None) -> list[types.ContentBlock]:
        """Read a resource of a connected MCP server by its URI (see list_mcp_resources).

        Args:
            uri: The resource's URI, e.g. "file:///notes.txt"; a URI template's variables filled in.
            server: The server to read it from; needed only when several servers offer the URI.
        """
        if only is not None:
            _servers_named(host, server, only)
            server = server or _offering(host, uri, only)
            if server is None:
                raise ToolError(f"call read_mcp_resource again with `server` set to one of: {', '.join(sorted(only))}")
        try:
            result = await host.read_resource(uri, server=server, check_permission=True)
        except PermissionDeniedError as error:
            raise ToolError(str(error)) from error
        except ResourceNotFoundError as error:
            if error.servers:
                raise ToolError(
                    f"{len(error.servers)} servers offer {uri!r} ({', '.join(error.servers)}); "
                    "call read_mcp_resource again with `server` set to one of them"
                ) from error
            raise ToolError(
                f"no connected server offers {uri!r}; call list_mcp_resources to see what there is"
            ) from error
        except MCPDeckError as error:
            raise ToolError(f"could not read {uri!r}: {error}") from error
        return _contents(result.contents)

    return read_mcp_resource


def _contents(contents: list[types.TextResourceContents | types.BlobResourceContents]) -> list[types.ContentBlock]:
    """A resource's contents as content blocks: text as text, images as images, other binary data described."""
    blocks: list[types.ContentBlock] = []
    several = len(contents) > 1
    for item in contents:
        if several:
            blocks.append(types.TextContent(text=f"[{item.uri}" + (f" ({item.mime_type})]" if item.mime_type else "]")))
        if isinstance(item, types.TextResourceContents):
            blocks.append(types.TextContent(text=item.text))
        elif item.mime_type and item.mime_type.startswith("image/"):
            blocks.append(types.ImageContent(data=item.blob, mime_type=item.mime_type))
        else:
            kind = item.mime_type or "unknown type"
            blocks.append(
                types.TextContent(text=f"[binary resource <{item.uri}>: {kind}, {_size(item.blob)}; not shown as text]")
            )
    if not blocks:
        blocks.append(types.TextContent(text="(the resource is empty)"))
    return blocks
