"""What every provider's converter shares: tool specs, the interface, the cache, result helpers.

A converter turns tool specs (catalog entries or native Python tools) into the provider's
tool definitions, reads the model's tool calls back as ``ToolCall`` (namespaced name and an
arguments dict), and turns ``ToolResult`` into the provider's tool-result message, block or
part. Everything is plain dicts in the provider's wire format; no provider SDK is needed.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

import mcp_types as types

from mcpdeck.providers._calls import ToolCall, ToolCallError
from mcpdeck.providers._schema import JsonSchema, object_root, prepare
from mcpdeck.results import DEFAULT_MAX_CHARS, ToolResult

__all__ = ["Converter", "ToolDefinition", "ToolSpec", "check_name", "data_url", "prepared"]


@runtime_checkable
class ToolSpec(Protocol):
    """What a converter needs of a tool. ``CatalogTool`` and ``ToolDefinition`` are both one."""

    @property
    def name(self) -> str:
        """The name the model calls it by (for MCP tools, the namespaced ``mcp__server__tool``)."""
        ...

    @property
    def description(self) -> str:
        """What the tool does, for the model."""
        ...

    @property
    def input_schema(self) -> Mapping[str, Any]:
        """JSON Schema of the arguments."""
        ...


def _no_arguments() -> dict[str, Any]:
    return {"type": "object", "properties": {}}


@dataclass(frozen=True, eq=False)
class ToolDefinition:
    """A tool that is not from an MCP server (a native Python tool), described for a model.

    Attributes:
        name: The name the model calls it by.
        description: What it does.
        input_schema: JSON Schema of its arguments (default: none).
    """

    name: str
    description: str = ""
    input_schema: Mapping[str, Any] = field(default_factory=_no_arguments)


def prepared(spec: ToolSpec, *, keep_cycles: bool) -> JsonSchema:
    """``prepare(spec.input_schema)``: references inlined and the root made an object.

    A catalog tool's ``schema_key`` is its definition as compact JSON from a serializer (no
    needless escapes). When that text shows no ``$ref``, ``$defs`` or ``definitions`` key, there
    is no reference to inline, and the walk over the schema that looks for them is skipped
    (a third of the first conversion of a 1000-tool catalog for OpenAI and Anthropic).
    """
    schema = spec.input_schema
    text = getattr(spec, "schema_key", None)
    if type(text) is str and not _may_refer(text):
        return object_root(schema)
    return prepare(schema, keep_cycles=keep_cycles)


def _may_refer(text: str) -> bool:
    """Whether compact JSON may hold a ``$ref``, ``$defs`` or ``definitions`` key.

    Such a key is written ``"$…`` or ``"definitions"``; strings that merely look so (``"$schema"``,
    a value ``"$5"``) only cost the walk. Each ``$`` is found by a one-character search (a
    two-character one is several times slower), then the character before it is looked at.
    """
    at = text.find("$")
    while at >= 0:
        if at == 0 or text[at - 1] == '"':
            return True
        at = text.find("$", at + 1)
    return '"definitions"' in text


def data_url(mime_type: str, data: str) -> str:
    """A ``data:`` URL for base64 ``data``."""
    return f"data:{mime_type};base64,{data}"


def check_name(name: str, pattern: re.Pattern[str], provider: str) -> str:
    """``name`` if the provider accepts it as a tool name, else a ValueError saying why."""
    if not pattern.fullmatch(name):
        raise ValueError(f"{provider} does not accept the tool name {name!r}: it must match {pattern.pattern}")
    return name


_NONE = object()


@dataclass
class _Made:
    """What the last conversion made, by tool name: each definition and the description and schema it came from."""

    descriptions: dict[str, str] = field(default_factory=dict[str, str])
    schemas: dict[str, object] = field(default_factory=dict[str, object])
    definitions: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])


@dataclass
class _Entry:
    catalog: object
    extras: tuple[ToolSpec, ...]
    tools: list[dict[str, Any]]


class Converter(ABC):
    """Tool definitions, tool calls and tool results for one provider's wire format.

    ``tools(catalog)`` keeps its answer per catalog version: asking again for the same
    catalog (and the same extra tools) returns the very same list, at the cost of a dict
    look-up, and a new version re-converts only the tools whose name, description or schema
    object changed. Treat the lists as read-only, and the options as fixed once made: the
    definitions share schema objects with the specs (a schema that needs no fix-up is sent as
    it is, see ``mcpdeck.providers._schema``), so changing one would change the catalog too.
    """

    provider: ClassVar[str]
    """The name ``get_provider`` knows this converter by."""
    image_types: ClassVar[frozenset[str]] = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
    """Image MIME types the provider accepts in tool results; others stay a text description."""

    def __init__(self, *, max_chars: int | None = DEFAULT_MAX_CHARS, max_description: int | None = None):
        """Create a converter.

        Args:
            max_chars: Cap on the text of one tool result (None: no cap).
            max_description: Cap on a tool's description (None: sent whole).
        """
        self.max_chars = max_chars
        self.max_description = max_description
        self._cache: OrderedDict[tuple[int, int, tuple[int, ...]], _Entry] = OrderedDict()
        self._made = _Made()

    # ----- tool definitions -------------------------------------------------------------

    @abstractmethod
    def tool(self, spec: ToolSpec) -> dict[str, Any]:
        """One tool's definition in the provider's format."""

    def _wrap(self, definitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The request's ``tools`` value made of the definitions (Gemini groups them)."""
        return definitions

    def tools(self, catalog: Iterable[ToolSpec], extra: Sequence[ToolSpec] = ()) -> list[dict[str, Any]]:
        """The request's ``tools`` value: ``extra`` (native tools) first, then the catalog's.

        Args:
            catalog: A ``Catalog`` (cached by its ``version``) or any iterable of tool specs (not cached).
            extra: Native tools to offer as well.

        Raises:
            ValueError: Two tools have the same name, or a name the provider refuses.
        """
        version = getattr(catalog, "version", None)
        extras = tuple(extra)
        if not isinstance(version, int):
            return self._convert(catalog, extras)
        # By identity, safe since each entry holds the catalog and extras. Kept because an agent
        # converts the same catalog on every turn, and converting it again costs under a
        # hundredth of the first time (bench's convert-again against convert-first: bench/RESULTS.md).
        key = (id(catalog), version, tuple(id(spec) for spec in extras))
        entry = self._cache.get(key)
        if entry is not None and entry.catalog is catalog:
            self._cache.move_to_end(key)
            return entry.tools
        converted = self._convert(catalog, extras)
        self._cache[key] = _Entry(catalog, extras, converted)
        while len(self._cache) > 4:
            self._cache.popitem(last=False)
        return converted

    def _convert(self, catalog: Iterable[ToolSpec], extras: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
        # A tool whose name, description and schema are those of the last conversion keeps its
        # definition: a new catalog version re-converts only the tools that changed. A catalog
        # tool's schema is compared by its ``schema_key`` (its definition's compact JSON: equal
        # strings, usually the same object), any other tool's by the identity of its schema.
        # Kept in three dicts by name, no tuple per tool: fewer objects for the cyclic GC to count.
        last, made = self._made, _Made()
        definitions = made.definitions
        for spec in (*extras, *catalog):
            name, description = spec.name, spec.description
            if name in definitions:
                raise ValueError(f"two tools are named {name!r}; give the native tool another name")
            schema: object = getattr(spec, "schema_key", None) or spec.input_schema
            old = last.schemas.get(name, _NONE)
            if (
                old is not _NONE
                and last.descriptions[name] == description
                and (old is schema or (type(schema) is str and old == schema))
            ):
                definitions[name] = last.definitions[name]
            else:
                definitions[name] = self.tool(spec)
            made.descriptions[name] = description
            made.schemas[name] = schema
        self._made = made
        return self._wrap(list(definitions.values())) if definitions else []

    def description(self, spec: ToolSpec) -> str:
        """The tool's description, cut to ``max_description``."""
        text = spec.description or ""
        if self.max_description is not None and len(text) > self.max_description:
            return text[: max(self.max_description - 1, 0)] + "…"
        return text

    # ----- tool calls -------------------------------------------------------------------

    @abstractmethod
    def parse_tool_call(self, call: Any) -> ToolCall:
        """One tool call (wire dict or SDK object) as a ``ToolCall``.

        Raises:
            ToolCallError: The call has no name or its arguments are not a JSON object.
        """

    @abstractmethod
    def tool_calls(self, message: Any) -> list[ToolCall]:
        """Every tool call in a model reply; one that cannot be read comes back with ``error`` set."""

    def _read_all(self, calls: Iterable[Any]) -> list[ToolCall]:
        result: list[ToolCall] = []
        for call in calls:
            try:
                result.append(self.parse_tool_call(call))
            except ToolCallError as error:
                result.append(ToolCall(id=error.call_id, name=error.name, arguments={}, error=str(error)))
        return result

    # ----- tool results -----------------------------------------------------------------

    @abstractmethod
    def tool_result(self, call: ToolCall, result: ToolResult) -> dict[str, Any]:
        """One result as the provider's tool-result message, block or part."""

    @abstractmethod
    def tool_results(self, results: Sequence[tuple[ToolCall, ToolResult]]) -> list[dict[str, Any]]:
        """The messages (or input items) that answer one turn's tool calls, in order."""

    def result_text(self, result: ToolResult, *, error_prefix: bool = False) -> str:
        """The result's text, capped at ``max_chars``; never empty.

        Args:
            result: The result.
            error_prefix: Start a failed result with "Error: " (for providers with no error field).
        """
        text = result.text(self.max_chars)
        if not text and not self.images(result):
            text = "(no content)"
        if error_prefix and result.is_error and not text.lower().startswith("error"):
            text = f"Error: {text}"
        return text

    def images(self, result: ToolResult) -> list[tuple[str, str]]:
        """``(MIME type, base64 data)`` of the result's images the provider accepts."""
        return [
            (block.mime_type, block.data)
            for block in result.content
            if isinstance(block, types.ImageContent) and block.mime_type in self.image_types
        ]
