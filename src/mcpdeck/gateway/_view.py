"""What one profile shows of the host: its tools, resources and prompts, under the names it serves them.

A view is rebuilt from the host on every list request, so a server that connects, a tool
list that changes or a profile edited in the config file shows at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import mcp_types as types

from mcpdeck.catalog import CatalogTool
from mcpdeck.config import ProfileConfig
from mcpdeck.host import Host
from mcpdeck.permissions import Access
from mcpdeck.resources import PromptEntry
from mcpdeck.status import ServerState

__all__ = ["ProfileView"]


def _scheme(uri: str) -> str:
    """A URI's scheme (``file``, ``demo`` ...), lower-cased; empty when it has none."""
    scheme, colon, _ = uri.partition(":")
    return scheme.lower() if colon and scheme.isascii() and scheme[:1].isalpha() else ""


@dataclass(frozen=True)
class ProfileView:
    """One profile's window on the host."""

    host: Host
    name: str | None
    """The profile's name; None for the whole catalog."""
    profile: ProfileConfig = field(default_factory=ProfileConfig)
    """What it serves; the default is every server and tool under catalog names."""

    def _tool_name(self, entry: CatalogTool) -> str:
        return entry.name if self.profile.prefix else entry.original_name

    def tools(self) -> list[tuple[str, CatalogTool]]:
        """``(served name, catalog tool)`` for every tool of the profile that no ``deny`` rule covers (what is
        refused is not listed, as for resources and prompts; a call by name is refused saying why)."""
        profile, denied = self.profile, self.host.permissions.denied
        return [
            (self._tool_name(entry), entry)
            for entry in self.host.catalog
            if profile.allows_tool(entry.server, entry.name, entry.original_name) and denied(entry) is None
        ]

    def tool(self, name: str) -> CatalogTool | None:
        """The catalog tool a served name stands for, if the profile has it."""
        catalog = self.host.catalog
        if self.profile.prefix:
            entry = catalog.get(name)
        else:
            servers = self.profile.servers or []
            entry = catalog.find(servers[0], name) if servers else None
        if entry is None or not self.profile.allows_tool(entry.server, entry.name, entry.original_name):
            return None
        return entry

    def listed_tool(self, served: str, entry: CatalogTool) -> types.Tool:
        """The tool as the server described it, under its served name (everything else unchanged)."""
        if entry.tool.name == served:
            return entry.tool
        return entry.tool.model_copy(update={"name": served})

    def servers(self) -> list[str]:
        """The profile's servers that are known to the host, in config order."""
        return [name for name in self.host.servers if self.profile.serves(name)]

    def _shown(self, kind: Literal["resource", "prompt"], server: str, target: str) -> bool:
        """Whether the profile has the server and no deny rule refuses the access (what is refused is not listed)."""
        return self.profile.serves(server) and self.host.permissions.denied(Access(kind, server, target)) is None

    def resources(self) -> list[types.Resource]:
        """Every resource of the profile's servers, URIs as their servers give them."""
        return [e.resource for e in self.host.resources if self._shown("resource", e.server, e.uri)]

    def templates(self) -> list[types.ResourceTemplate]:
        """Every resource template of the profile's servers."""
        return [e.template for e in self.host.resource_templates if self._shown("resource", e.server, e.uri_template)]

    def server_for_uri(self, uri: str) -> str | None:
        """The server that answers for a URI: the first of the profile's servers (in config order) that lists
        it, else the first with a template matching it. Else, among the profile's servers that offer resources
        at all (servers need not list everything): the only one, or the only one whose resources and templates
        use the URI's scheme. None when no server can be told to be the one to ask."""
        claimed = self.claiming(uri)
        if claimed is not None:
            return claimed
        offering = [
            status.name
            for status in self.host.servers.values()
            if self.profile.serves(status.name)
            and status.state is ServerState.CONNECTED
            and status.capabilities is not None
            and status.capabilities.resources is not None
        ]
        if len(offering) <= 1:
            return offering[0] if offering else None
        scheme = _scheme(uri)
        if not scheme:
            return None
        claimed = {e.server for e in self.host.resources if _scheme(e.uri) == scheme}
        claimed |= {e.server for e in self.host.resource_templates if _scheme(e.uri_template) == scheme}
        same = [name for name in offering if name in claimed]
        return same[0] if len(same) == 1 else None

    def claiming(self, uri: str) -> str | None:
        """The first of the profile's servers (in config order) that lists ``uri``, else the first with a template
        matching it; None if none does."""
        listed = [e.server for e in self.host.resources if e.uri == uri and self.profile.serves(e.server)]
        if listed:
            return self._first(listed)
        matching = [e.server for e in self.host.resource_templates if self.profile.serves(e.server) and e.matches(uri)]
        return self._first(matching) if matching else None

    def server_for_template(self, uri_template: str) -> str | None:
        """The server with a resource template of this exact text (the first in config order)."""
        found = [
            e.server
            for e in self.host.resource_templates
            if e.uri_template == uri_template and self.profile.serves(e.server)
        ]
        return self._first(found) if found else None

    def _first(self, servers: list[str]) -> str:
        order = {name: index for index, name in enumerate(self.host.servers)}
        return min(servers, key=lambda name: order.get(name, len(order)))

    def _prompt_name(self, entry: PromptEntry) -> str:
        return entry.name if self.profile.prefix else entry.original_name

    def prompts(self) -> list[types.Prompt]:
        """Every prompt of the profile's servers, under its served name."""
        result: list[types.Prompt] = []
        for entry in self.host.prompts:
            if self._shown("prompt", entry.server, entry.original_name):
                served = self._prompt_name(entry)
                prompt = entry.prompt
                result.append(prompt if prompt.name == served else prompt.model_copy(update={"name": served}))
        return result

    def prompt(self, name: str) -> PromptEntry | None:
        """The prompt a served name stands for, if the profile has it."""
        for entry in self.host.prompts:
            if self.profile.serves(entry.server) and self._prompt_name(entry) == name:
                return entry
        return None
