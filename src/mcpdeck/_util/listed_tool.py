"""One tool as a server listed it, kept small: what the host keeps for every tool it knows.

A host must keep every tool of every server, and a tool's JSON Schema held as Python
dicts costs about five times its JSON (a dict, a key and a value object per node). So a
listed tool keeps its name, title, description and read-only hint as plain attributes
(what listing, searching and the permission gate read) and the rest of its definition,
schemas and annotations included, as one compact JSON string; ``input_schema``,
``annotations`` and ``tool`` decode it when asked, giving the caller a fresh object of its
own. Measured with ``python -m bench.footprint``: a tool of ~1.1 KB of JSON costs ~6.3 KB
as an SDK ``Tool`` model and ~1.7 KB in this form, the catalog entry included.

What a call needs on every call (the argument check and the defaults to fill) is made
from the schema once, at the tool's first call, and kept here, so it lives as long as the
server's list and survives catalog rebuilds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, final

import mcp_types as types
from pydantic_core import from_json

__all__ = ["ListedTool"]

_KEPT_APART = frozenset({"name", "description"})


@final
class ListedTool:
    """One tool of a server's list: name, description, title and read-only hint, the rest as JSON."""

    __slots__ = ("body", "checks", "description", "name", "read_only", "title")

    name: str
    """The name the server uses."""
    title: str | None
    """A human title: the tool's own, else its annotations' (``None`` if neither)."""
    description: str
    """What the tool does (``""`` if the server said nothing)."""
    read_only: bool
    """Whether the server says the tool changes nothing (``readOnlyHint``)."""
    checks: Any
    """What the host made from the schema at the first call (``catalog``'s argument checks), else None."""
    body: str
    """The rest of the definition (schemas, annotations, meta) as compact JSON."""

    def __init__(self, tool: types.Tool):
        annotations = tool.annotations
        self.name = tool.name
        self.title = tool.title or (annotations.title if annotations else None)
        self.description = tool.description or ""
        self.read_only = bool(annotations and annotations.read_only_hint)
        self.checks = None
        # Everything else, as the server would send it, in one compact string.
        self.body = tool.model_dump_json(by_alias=True, exclude_none=True, exclude=set(_KEPT_APART))

    def data(self) -> dict[str, Any]:
        """The definition but name and description, as JSON data (a fresh copy)."""
        # pydantic-core's parser, with its string cache: about twice as fast as json.loads here
        # (bench/RESULTS.md), and that decode is most of what the
        # first conversion of a catalog costs (bench/: convert-first). It reads a str through
        # its UTF-8 form, which CPython keeps inside the str once made: free for an ASCII body
        # (its own buffer), a copy kept for good for any other, so that one goes as bytes.
        body = self.body
        return from_json(body if body.isascii() else body.encode(), cache_strings="all")

    @property
    def input_schema(self) -> dict[str, Any]:
        """JSON Schema of the arguments (a fresh copy: the caller may change it)."""
        return self.data()["inputSchema"]

    @property
    def output_schema(self) -> dict[str, Any] | None:
        """JSON Schema of the structured result, if declared (a fresh copy)."""
        return self.data().get("outputSchema")

    @property
    def annotations(self) -> types.ToolAnnotations | None:
        """Hints such as ``readOnlyHint`` and ``destructiveHint`` (a fresh model)."""
        data = self.data().get("annotations")
        return None if data is None else types.ToolAnnotations.model_validate(data)

    def tool(self) -> types.Tool:
        """The whole definition as an SDK ``Tool`` (a new model each time)."""
        data = self.data()
        data["name"] = self.name
        if self.description:
            data["description"] = self.description
        return types.Tool.model_validate(data)

    def cached(self, make: Callable[[dict[str, Any]], Any]) -> Any:
        """``make(input_schema)``, made at the first call and kept."""
        checks = self.checks
        if checks is None:
            checks = self.checks = make(self.input_schema)
        return checks

    def __repr__(self) -> str:
        return f"ListedTool({self.name!r})"
