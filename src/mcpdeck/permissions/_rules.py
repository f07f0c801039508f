"""The rules: ``allow`` / ``ask`` / ``deny`` patterns (read with the config document: ``mcpdeck.config``), and what a
pattern covers.

A subject is a catalog tool, an :class:`Access` (reading a resource, getting a prompt) or a
native tool's name; see the package docstring for how patterns match them.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Literal

from mcpdeck.catalog import PREFIX, CatalogTool
from mcpdeck.config import PermissionRules, RuleKind, parse_permissions

__all__ = [
    "Access",
    "PermissionRules",
    "RuleKind",
    "Subject",
    "covers_server",
    "parse_permissions",
    "pattern_matches",
]

_ACCESS_TAGS = ("resource:", "prompt:")


@dataclass(frozen=True)
class Access:
    """Something of a server other than a tool call that the gate decides: reading a resource, getting a prompt."""

    kind: Literal["resource", "prompt"]
    server: str
    target: str
    """The resource's URI, or the prompt's name as the server knows it."""

    @property
    def original_name(self) -> str:
        """``resource:<uri>`` or ``prompt:<name>``: what rules and ``autoApprove`` match after the server part."""
        return f"{self.kind}:{self.target}"

    @property
    def name(self) -> str:
        """The name rules match and answers are saved under: ``mcp__<server>__resource:<uri>``."""
        return f"{PREFIX}{self.server}__{self.original_name}"

    @property
    def description(self) -> str:
        """What is being done, in words, for the approval prompt."""
        if self.kind == "resource":
            return f"Read the resource {self.target} of server {self.server!r}"
        return f"Get the prompt {self.target!r} of server {self.server!r}"


Subject = CatalogTool | Access | str
"""What the gate decides about: a catalog tool, a resource or prompt access, or a native tool's name."""


def _tails(subject: CatalogTool | Access) -> list[str]:
    """The names of ``subject`` after ``mcp__<server>__``: the public one (unless cut) and the original."""
    if isinstance(subject, Access):
        return [subject.original_name]
    tails: list[str] = []
    head = f"{PREFIX}{subject.server}__"
    if subject.name.startswith(head):
        tails.append(subject.name[len(head) :])
    # A tool the server calls "resource:..." must not pass for a resource under a resource rule.
    if not subject.original_name.startswith(_ACCESS_TAGS):
        tails.append(subject.original_name)
    return tails


def pattern_matches(pattern: str, subject: Subject) -> bool:
    """Whether a rule pattern covers a catalog tool, a resource or prompt access, or a native tool (by name)."""
    if isinstance(subject, str):
        return fnmatchcase(subject, pattern)
    tails = _tails(subject)
    body = pattern[len(PREFIX) :] if pattern.startswith(PREFIX) else None
    if body is None or "__" not in body:
        # No server part (`*write*`, `mcp__*write*`) or a whole server (`mcp__github`): every name counts.
        if body is not None and fnmatchcase(subject.server, body):
            return True
        names = {subject.name, *(f"{PREFIX}{subject.server}__{tail}" for tail in tails)}
        return any(fnmatchcase(name, pattern) for name in names)
    cut = body.find("__")
    while cut != -1:  # a server name may end in "_": try every place the separator could be
        server_part, tool_part = body[:cut], body[cut + 2 :]
        if fnmatchcase(subject.server, server_part) and any(fnmatchcase(tail, tool_part) for tail in tails):
            return True
        cut = body.find("__", cut + 1)
    return False


_PROBES = ("\x00", "resource:\x00", "prompt:\x00")
"""Names no tool, resource or prompt has: a pattern that covers all of them under a server covers the server."""


def covers_server(pattern: str, server: str) -> bool:
    """Whether a pattern covers everything of ``server`` (``mcp__fs``, ``mcp__fs__*``, ``mcp__*``, ``*``), so that
    a ``deny`` of it keeps every request from the server, also those about no tool, resource or prompt in
    particular (a log level, say)."""
    body = pattern[len(PREFIX) :] if pattern.startswith(PREFIX) else None
    if body is not None and "__" not in body and fnmatchcase(server, body):
        return True
    return all(fnmatchcase(f"{PREFIX}{server}__{probe}", pattern) for probe in _PROBES)
