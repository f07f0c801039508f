"""The config file's ``permissions`` object: ``allow`` / ``ask`` / ``deny`` lists of patterns, read and checked.

What a pattern covers, and the gate that applies the rules, live in ``mcpdeck.permissions``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

from mcpdeck.errors import ConfigError

__all__ = ["PermissionRules", "RuleKind", "parse_permissions"]

RuleKind = Literal["allow", "ask", "deny"]
_KINDS: tuple[RuleKind, ...] = ("allow", "ask", "deny")


@dataclass(frozen=True)
class PermissionRules:
    """The ``allow`` / ``ask`` / ``deny`` patterns of one config document."""

    allow: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()


def parse_permissions(doc: Mapping[str, Any], *, path: str | None = None) -> PermissionRules:
    """Read and check the top-level ``permissions`` object of a raw config document.

    Raises:
        ConfigError: ``permissions`` is not an object, has an unknown key (a misspelt ``deny``
            must not go unnoticed), or holds something other than a list of non-empty strings.
    """
    section: object = doc.get("permissions")
    if section is None:
        return PermissionRules()
    if not isinstance(section, dict):
        raise ConfigError(f"permissions: expected an object, got {type(section).__name__}", path=path)
    entries = cast(dict[str, object], section)
    unknown = sorted(set(entries) - set(_KINDS))
    if unknown:
        raise ConfigError(f"permissions: unknown key {unknown[0]!r}; the keys are allow, ask and deny", path=path)
    found: dict[str, tuple[str, ...]] = {}
    for kind in _KINDS:
        patterns: object = entries.get(kind) or []
        if not isinstance(patterns, list):
            raise ConfigError(f"permissions.{kind}: expected a list of patterns", path=path)
        for i, pattern in enumerate(cast(list[object], patterns)):
            if not isinstance(pattern, str) or not pattern.strip():
                raise ConfigError(
                    f"permissions.{kind}[{i}]: expected a non-empty pattern string, got {pattern!r}", path=path
                )
            if pattern != pattern.strip():  # " mcp__fs" would match nothing: a deny that silently does not
                raise ConfigError(
                    f"permissions.{kind}[{i}]: the pattern {pattern!r} has spaces around it and would match "
                    f"nothing; write {pattern.strip()!r}",
                    path=path,
                )
        found[kind] = tuple(cast(list[str], patterns))
    return PermissionRules(**found)
