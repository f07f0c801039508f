"""Resources, resource templates and prompts of every server, in one place.

Prompts get public names like tools (``mcp__<server>__<prompt>``, same rules). Resources
keep their URI, with the server they come from: two servers may well offer the same URI,
so a URI alone is resolved only when it is not ambiguous.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp.shared.uri_template import InvalidUriTemplate, UriTemplate

from mcpdeck.catalog import assign_names

__all__ = ["PromptEntry", "ResourceEntry", "ResourceIndex", "TemplateEntry"]


@dataclass(frozen=True)
class ResourceEntry:
    """A resource a server lists."""

    server: str
    resource: types.Resource

    @property
    def uri(self) -> str:
        """The resource's URI."""
        return self.resource.uri

    def to_json(self) -> dict[str, Any]:
        """A stable JSON shape."""
        return {"server": self.server} | self.resource.model_dump(mode="json", by_alias=True, exclude_none=True)


@dataclass(frozen=True)
class TemplateEntry:
    """A resource template a server lists (an RFC 6570 URI template)."""

    server: str
    template: types.ResourceTemplate
    _parsed: list[UriTemplate | None] = field(default_factory=list[UriTemplate | None], repr=False, compare=False)

    @property
    def uri_template(self) -> str:
        """The template text, e.g. ``file:///{path}``."""
        return self.template.uri_template

    def matches(self, uri: str) -> bool:
        """Whether ``uri`` is an instance of this template."""
        if not self._parsed:
            parsed: UriTemplate | None = None
            with contextlib.suppress(InvalidUriTemplate, ValueError):
                parsed = UriTemplate.parse(self.uri_template)
            self._parsed.append(parsed)
        template = self._parsed[0]
        return template is not None and template.match(uri) is not None

    def to_json(self) -> dict[str, Any]:
        """A stable JSON shape."""
        return {"server": self.server} | self.template.model_dump(mode="json", by_alias=True, exclude_none=True)


@dataclass(frozen=True)
class PromptEntry:
    """A prompt under its public name."""

    name: str
    server: str
    prompt: types.Prompt

    @property
    def original_name(self) -> str:
        """The name the server uses."""
        return self.prompt.name

    @property
    def arguments(self) -> list[types.PromptArgument]:
        """The prompt's arguments."""
        return self.prompt.arguments or []

    def to_json(self) -> dict[str, Any]:
        """A stable JSON shape."""
        return {
            "name": self.name,
            "server": self.server,
            "prompt": self.original_name,
            "title": self.prompt.title,
            "description": self.prompt.description,
            "arguments": [
                {"name": a.name, "description": a.description, "required": bool(a.required)} for a in self.arguments
            ],
        }


class ResourceIndex:
    """Every server's resources, templates and prompts; rebuilt whole on any change."""

    def __init__(
        self,
        resources: Mapping[str, Sequence[types.Resource]] | None = None,
        templates: Mapping[str, Sequence[types.ResourceTemplate]] | None = None,
        prompts: Mapping[str, Sequence[types.Prompt]] | None = None,
    ):
        self.resources = [ResourceEntry(s, r) for s, items in (resources or {}).items() for r in items]
        self.templates = [TemplateEntry(s, t) for s, items in (templates or {}).items() for t in items]
        pairs = [(s, p) for s, items in (prompts or {}).items() for p in items]
        names = assign_names([(s, p.name) for s, p in pairs])
        self.prompts = [PromptEntry(n, s, p) for n, (s, p) in zip(names, pairs, strict=True)]
        self._prompts = {entry.name: entry for entry in self.prompts}

    def prompt(self, name: str) -> PromptEntry | None:
        """The prompt of that public name."""
        return self._prompts.get(name)

    def servers_for_uri(self, uri: str, servers: Iterable[str] | None = None) -> list[str]:
        """Servers that list ``uri``, or else have a template it matches (in that order of preference)."""
        allowed = set(servers) if servers is not None else None
        listed = [e.server for e in self.resources if e.uri == uri and (allowed is None or e.server in allowed)]
        if listed:
            return list(dict.fromkeys(listed))
        templated = [e.server for e in self.templates if (allowed is None or e.server in allowed) and e.matches(uri)]
        return list(dict.fromkeys(templated))
