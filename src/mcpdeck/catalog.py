"""One catalog of every server's tools, under stable, safe names.

A tool ``read_file`` of server ``fs`` is ``mcp__fs__read_file``. Names hold only
``[A-Za-z0-9_-]`` and at most 64 characters. When a name is too long, the server part
gives way first (cut, with four hex digits hashed from the whole server name), so the
tool's own name stays readable; only a tool name too long by itself is cut, with six hex
digits hashed from (server, original name). Names that several tools would share get that
suffix too (all but one unaltered name among them). Every name depends only on (server,
tool): the same in every run, whatever order servers answer in. Nothing is ever silently
overwritten.

The index maps each name back to ``(server, original tool name)``: names are looked up,
never split.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import mcp_types as types
from jsonschema import SchemaError
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for

from mcpdeck._util.listed_tool import ListedTool

__all__ = [
    "MAX_TOOL_NAME",
    "Catalog",
    "CatalogTool",
    "assign_names",
    "build_catalog",
    "servers_named_by",
    "tool_name",
    "unlisted_tool",
]

MAX_TOOL_NAME = 64
PREFIX = "mcp__"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


_SIMPLE_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
    "null": (type(None),),
}
_SCHEMA_WORDS = frozenset({"type", "properties", "required", "title", "description", "$schema", "additionalProperties"})
_FIELD_WORDS = frozenset({"type", "title", "description", "default", "examples"})


def _simple_check(schema: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], bool] | None:
    """A fast "fits" test for a flat object schema of simply typed fields, or None if the schema is not one."""
    if not set(schema) <= _SCHEMA_WORDS or schema.get("type", "object") != "object":
        return None
    extra = schema.get("additionalProperties", True)
    properties: Any = schema.get("properties") or {}
    required: Any = schema.get("required") or []
    if extra not in (True, False) or not isinstance(properties, dict) or not isinstance(required, list):
        return None
    fields: dict[str, tuple[type, ...] | None] = {}
    for key, spec in cast(dict[str, Any], properties).items():
        if not isinstance(spec, dict) or not set(cast(dict[str, Any], spec)) <= _FIELD_WORDS:
            return None
        kind: Any = cast(dict[str, Any], spec).get("type")
        kinds: list[Any] = cast(list[Any], kind) if isinstance(kind, list) else [kind] if kind is not None else []
        if any(k not in _SIMPLE_TYPES for k in kinds):
            return None
        fields[key] = tuple(t for k in kinds for t in _SIMPLE_TYPES[k]) or None
    needed = tuple(str(k) for k in cast(list[Any], required))
    closed = extra is False

    def fits(arguments: Mapping[str, Any]) -> bool:
        for key in needed:
            if key not in arguments:
                return False
        for key, value in arguments.items():
            if key not in fields:
                if closed:
                    return False
                continue
            allowed = fields[key]
            if allowed is None:
                continue
            if isinstance(value, bool) and bool not in allowed:
                return False  # JSON Schema keeps booleans apart from numbers
            if not isinstance(value, allowed):
                return False
        return True

    return fits


def _suffix(server: str, tool: str) -> str:
    return hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:6]


_ROOM = MAX_TOOL_NAME - len(PREFIX) - len("__")
"""Characters a server name and a tool name share in a public name (57)."""
_SERVER_KEEP = 8
"""A shortened server part keeps at least this many of the server's characters (then ``-`` and 4 hex digits)."""


def _short_server(server: str, room: int) -> str:
    """The server part cut to ``room`` characters: its start, ``-``, and 4 hex digits of the whole name."""
    digest = hashlib.sha256(server.encode()).hexdigest()[:4]
    return f"{server[: room - 5]}-{digest}"


def tool_name(server: str, tool: str) -> tuple[str, bool]:
    """The plain namespaced name of a tool, and whether it is exactly the original (not altered).

    A name longer than 64 characters is shortened: the server part first (down to 8 of its
    characters and a hash of the whole server name), then, only if the tool's own name is
    still too long, the tool part, which then ends in a hash of (server, tool). Callers that
    need the final, collision-free name use ``build_catalog``.
    """
    safe = _UNSAFE.sub("_", tool) or "_"
    if len(server) + len(safe) <= _ROOM:
        return f"{PREFIX}{server}__{safe}", safe == tool
    smallest = _SERVER_KEEP + 5
    if _ROOM - len(safe) >= smallest:  # the tool's name fits beside a shortened server part
        return f"{PREFIX}{_short_server(server, _ROOM - len(safe))}__{safe}", False
    part = _short_server(server, smallest) if len(server) > smallest else server
    room = _ROOM - len(part) - 7
    return f"{PREFIX}{part}__{safe[:room]}_{_suffix(server, tool)}", False


def servers_named_by(name: str, servers: Iterable[str]) -> list[str]:
    """The servers whose tools (or prompts) could bear the public name ``name``.

    A public name starts with its server's name, or with the shortened server part
    ``tool_name`` makes (its start, ``-`` and four hex digits of the whole name). This does
    not say the tool exists (only the catalog knows): it tells which servers to start to
    find out. [] when the name is not a namespaced one or names no server of ``servers``.
    """
    if not name.startswith(PREFIX):
        return []
    part = name[len(PREFIX) :].partition("__")[0]
    found: list[str] = []
    for server in servers:
        if name.startswith(f"{PREFIX}{server}__"):
            found.append(server)
        elif len(part) > 5 and part[-5] == "-" and server.startswith(part[:-5]):
            if hashlib.sha256(server.encode()).hexdigest()[:4] == part[-4:]:
                found.append(server)
    return found


def _with_suffix(base: str, server: str, tool: str) -> str:
    return f"{base[: MAX_TOOL_NAME - 7]}_{_suffix(server, tool)}"


_FastCheck = Callable[[Mapping[str, Any]], bool]
_UNSET: Any = object()
_REF_LOOP = (
    "its input schema cannot be checked: a $ref in it loops back to itself; "
    "send the call unchecked (validate=False, or `mcpdeck call --no-validate`) to let the server judge"
)


def _required_defaults(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The declared ``default`` of each required property that has one."""
    required: Any = schema.get("required")
    properties: Any = schema.get("properties")
    if not isinstance(required, list) or not isinstance(properties, dict):
        return {}
    defaults: dict[str, Any] = {}
    for key in cast(list[Any], required):
        spec: Any = cast(dict[Any, Any], properties).get(key)
        if isinstance(key, str) and isinstance(spec, dict) and "default" in spec:
            defaults[key] = cast(dict[str, Any], spec)["default"]
    return defaults


class _Checks:
    """What a call needs from a tool's schema, made at its first call: the fast check, the defaults to
    fill and, at the first misfit, the compiled validator (which keeps the schema)."""

    __slots__ = ("defaults", "fast", "validator")

    def __init__(self, schema: dict[str, Any]):
        self.fast: _FastCheck | None = _simple_check(schema)
        self.defaults = _required_defaults(schema)
        self.validator: Validator | None = _UNSET

    def compiled(self, schema: dict[str, Any]) -> Validator | None:
        validator = self.validator
        if validator is _UNSET:
            try:
                cls = validator_for(schema)
                cls.check_schema(schema)
                validator = cls(schema)
            except (SchemaError, RecursionError):
                validator = None
            self.validator = validator
        return validator


@dataclass(frozen=True, eq=False, slots=True)
class CatalogTool:
    """One tool in the catalog: its public name, its server, and what the server said of it.

    The definition is the server's ``ListedTool``, shared with the server's list (kept once,
    compact: see ``mcpdeck._util.listed_tool``); ``input_schema``, ``annotations`` and ``tool`` give
    fresh objects decoded from it.
    """

    name: str
    server: str
    listed: ListedTool

    @property
    def original_name(self) -> str:
        """The name the server uses."""
        return self.listed.name

    @property
    def title(self) -> str | None:
        """A human title, if the server gave one."""
        return self.listed.title

    @property
    def description(self) -> str:
        """The tool's description ("" if none)."""
        return self.listed.description

    @property
    def input_schema(self) -> dict[str, Any]:
        """JSON Schema of the arguments (a fresh copy)."""
        return self.listed.input_schema

    @property
    def schema_key(self) -> str:
        """Equal for equal definitions: what conversion caches compare instead of the schema itself."""
        return self.listed.body

    @property
    def output_schema(self) -> dict[str, Any] | None:
        """JSON Schema of the structured result, if declared (a fresh copy)."""
        return self.listed.output_schema

    @property
    def annotations(self) -> types.ToolAnnotations | None:
        """Hints such as ``readOnlyHint`` and ``destructiveHint``."""
        return self.listed.annotations

    @property
    def read_only(self) -> bool:
        """Whether the server says the tool does not change anything."""
        return self.listed.read_only

    @property
    def tool(self) -> types.Tool:
        """The whole definition as an SDK ``Tool`` (a new model each time)."""
        return self.listed.tool()

    def _checks(self) -> _Checks:
        return self.listed.cached(_Checks)

    def with_defaults(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """``arguments`` with the declared ``default`` of each missing required property filled in.

        A property that is both required and given a default (common in generated schemas)
        is one the server fills itself; sending the default keeps a strict server happy too.
        """
        filled = dict(arguments)
        for key, value in self._checks().defaults.items():
            filled.setdefault(key, value)
        return filled

    def validate_arguments(self, arguments: Mapping[str, Any]) -> list[str]:
        """Problems with ``arguments`` against the input schema ([] when they fit).

        Only what is certain to fail is reported (callers fill defaults first, see
        ``with_defaults``). Most tools take a flat object of simply typed fields; for those a
        direct check of required keys and types answers "fits" without the general validator,
        which costs more per call than that check (bench/RESULTS.md). Anything else — and every
        misfit, for its messages — goes to the compiled ``jsonschema`` validator, which is kept.
        A schema the validator cannot read, or one whose references it cannot resolve, is the
        server's to judge: nothing is checked here. A schema whose ``$ref`` chain loops back on
        itself cannot be checked at all, and says so (the call can still be sent unchecked).
        """
        checks = self._checks()
        fast = checks.fast
        if fast is not None and fast(arguments):
            return []
        validator = checks.validator
        if validator is _UNSET:
            validator = checks.compiled(self.input_schema)
        if validator is None:
            return []
        try:
            errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.path))
        except RecursionError:
            return [_REF_LOOP]
        except Exception:  # an unresolvable $ref (remote, missing) and the like: the server decides
            return []
        problems: list[str] = []
        for error in errors:
            where = "/".join(str(p) for p in error.path)
            problems.append(f"{where}: {error.message}" if where else error.message)
        return problems

    def to_json(self) -> dict[str, Any]:
        """A stable JSON shape for ``--json`` output and the web API."""
        data = self.listed.data()
        return {
            "name": self.name,
            "server": self.server,
            "tool": self.original_name,
            "title": self.title,
            "description": self.description,
            "inputSchema": data["inputSchema"],
            "outputSchema": data.get("outputSchema"),
            "annotations": data.get("annotations"),
        }


def unlisted_tool(server: str, name: str) -> CatalogTool:
    """An entry standing for a tool ``name`` that ``server`` does not list (no schema, nothing to check): for a
    call the server itself is to judge (another gateway says why it has no such tool)."""
    listed = ListedTool(types.Tool(name=name, input_schema={"type": "object"}))
    return CatalogTool(name=tool_name(server, name)[0], server=server, listed=listed)


class Catalog:
    """An immutable set of tools with a version; a new catalog replaces it on every change."""

    def __init__(self, tools: Iterable[CatalogTool] = (), version: int = 0):
        self._tools = {tool.name: tool for tool in tools}
        self._by_origin = {(tool.server, tool.original_name): tool for tool in self._tools.values()}
        self.version = version

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[CatalogTool]:
        return iter(self._tools.values())

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def get(self, name: str) -> CatalogTool | None:
        """The tool of that public name, if any."""
        return self._tools.get(name)

    def find(self, server: str, original_name: str) -> CatalogTool | None:
        """The entry for a server's tool, by its original name."""
        return self._by_origin.get((server, original_name))

    def for_server(self, server: str) -> list[CatalogTool]:
        """That server's tools."""
        return [tool for tool in self._tools.values() if tool.server == server]

    def names(self) -> list[str]:
        """All public names."""
        return list(self._tools)


def assign_names(items: Sequence[tuple[str, str]]) -> list[str]:
    """Public names for ``(server, original name)`` pairs, in the same order.

    Names do not depend on the order items come in. A name that fits and was not altered
    is kept, unless other items want the same name; then, if exactly one of them is
    unaltered, it keeps the name and the others get the hash suffix, and otherwise they all
    do. A shortened name carries its own hashes (see ``tool_name``).
    """
    planned: list[tuple[str, bool]] = []
    exact_claims: dict[str, int] = {}
    claims: dict[str, int] = {}
    for server, original in items:
        base, exact = tool_name(server, original)
        planned.append((base, exact))
        claims[base] = claims.get(base, 0) + 1
        exact_claims[base] = exact_claims.get(base, 0) + exact
    names: list[str] = []
    taken: set[str] = set()
    for (server, original), (base, exact) in zip(items, planned, strict=True):
        keeps = claims[base] == 1 or (exact and exact_claims[base] == 1)
        name = base if keeps else _with_suffix(base, server, original)
        if name in taken:  # a 24-bit suffix collision: astronomically rare, but never overwrite
            name = _with_suffix(name, server, f"{original}\0{len(taken)}")
        taken.add(name)
        names.append(name)
    return names


def build_catalog(tools_by_server: Mapping[str, Sequence[ListedTool | types.Tool]], version: int) -> Catalog:
    """Name every tool (see ``assign_names``) and build the catalog.

    Servers' lists hold ``ListedTool``s, which the catalog shares; an SDK ``Tool`` (from code
    or tests) is made into one first.
    """
    pairs = [
        (server, tool if isinstance(tool, ListedTool) else ListedTool(tool))
        for server, tools in tools_by_server.items()
        for tool in tools
    ]
    names = assign_names([(server, tool.name) for server, tool in pairs])
    return Catalog(
        (CatalogTool(name=name, server=server, listed=tool) for name, (server, tool) in zip(names, pairs, strict=True)),
        version,
    )
