"""Tool results cut to what a page shows at once, and the whole kept a while for the rest.

A call made with ``cut`` (characters) answers with each text block cut to its first ``cut``
characters (at a line's end where there is one within them), and the structured content, when
its JSON is longer than ``cut``, pruned: at most ``ENTRIES`` entries of each object and array
and ``STRING`` characters of each string. The answer's ``shown`` says what was cut and by
how much, with JSON pointers to each pruned place, and which text block only repeats the
structured content (``repeats``: its JSON, or the one string an SDK wraps a text result in),
so a page shows that once. The whole result is kept (the newest ``KEEP`` results, at most
``KEEP_CHARS`` characters) for ``GET /api/calls/{callId}/result`` and its parts.

Cutting walks the whole result (its size, the repeat check): it runs in a worker thread.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any, cast

import mcp_types as types

from mcpdeck.results import ToolResult

__all__ = ["ENTRIES", "KEEP", "KEEP_CHARS", "STRING", "KeptResults", "cut_result"]

ENTRIES = 100
"""Entries of one object or array the pruned structured content keeps."""
STRING = 2_000
"""Characters of one string the pruned structured content keeps."""
_NODES = 5_000
"""Values the pruned structured content keeps in all; past them, containers are sent empty."""
KEEP = 16
"""Whole results kept for their calls' ``/result`` (the newest)."""
KEEP_CHARS = 64 * 1024 * 1024
"""Characters of content the kept results may hold together."""


def _cut_text(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    end = text.rfind("\n", 0, limit)
    return text[: end + 1] if end > limit // 2 else text[:limit]


def _lines(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def _pointer(path: str, key: str | int) -> str:
    return f"{path}/{str(key).replace('~', '~0').replace('/', '~1')}"


def _prune(value: Any, path: str, cuts: dict[str, dict[str, int]], budget: list[int]) -> Any:
    """``value`` with long arrays, objects and strings cut; each cut noted in ``cuts`` under its JSON pointer."""
    budget[0] -= 1
    if isinstance(value, dict):
        items = list(cast(dict[str, Any], value).items())
        keep = items[: min(ENTRIES, max(0, budget[0]))]
        if len(keep) < len(items):
            cuts[path] = {"entries": len(items)}
        return {key: _prune(item, _pointer(path, key), cuts, budget) for key, item in keep}
    if isinstance(value, list):
        items = cast(list[Any], value)
        keep = items[: min(ENTRIES, max(0, budget[0]))]
        if len(keep) < len(items):
            cuts[path] = {"entries": len(items)}
        return [_prune(item, _pointer(path, index), cuts, budget) for index, item in enumerate(keep)]
    if isinstance(value, str) and len(value) > STRING:
        cuts[path] = {"characters": len(value)}
        return value[:STRING]
    return value


def _repeats(result: ToolResult) -> dict[str, Any] | None:
    """Which text block only repeats the structured content, and how (``json`` or ``wrapped``)."""
    structured = result.structured_content
    texts = [(i, b) for i, b in enumerate(result.content) if isinstance(b, types.TextContent)]
    if structured is None or len(texts) != 1:
        return None
    index, block = texts[0]
    if len(structured) == 1:
        key, value = next(iter(structured.items()))
        if value == block.text:
            return {"block": index, "as": "wrapped", "key": key}
    if block.text.lstrip()[:1] in ("{", "["):
        try:
            parsed = json.loads(block.text)
        except ValueError:
            return None
        if parsed == structured:
            return {"block": index, "as": "json"}
    return None


def cut_result(result: ToolResult, limit: int) -> tuple[dict[str, Any], bool]:
    """The result's JSON (``ToolResult.to_json()``) cut to ``limit``, with ``shown``; and whether anything was cut."""
    data = result.to_json()
    blocks: dict[str, dict[str, int]] = {}
    for index, block in enumerate(result.content):
        if isinstance(block, types.TextContent) and len(block.text) > limit:
            blocks[str(index)] = {"characters": len(block.text), "lines": _lines(block.text)}
            data["content"][index]["text"] = _cut_text(block.text, limit)
    structured: dict[str, Any] | None = None
    if result.structured_content is not None:
        size = len(json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"), default=str))
        if size > limit:
            cuts: dict[str, dict[str, int]] = {}
            data["structuredContent"] = _prune(result.structured_content, "", cuts, [_NODES])
            structured = {"characters": size, "cuts": cuts}
    cut = bool(blocks or structured)
    data["shown"] = {
        "limit": limit,
        "content": blocks,
        "structuredContent": structured,
        "repeats": _repeats(result),
        "kept": cut,
    }
    return data, cut


class KeptResults:
    """The whole results of the newest cut calls, by call id."""

    def __init__(self, keep: int = KEEP, chars: int = KEEP_CHARS):
        self._keep, self._chars = keep, chars
        self._results: OrderedDict[str, ToolResult] = OrderedDict()

    def add(self, call_id: str, result: ToolResult) -> None:
        self._results.pop(call_id, None)
        self._results[call_id] = result
        while len(self._results) > 1 and (
            len(self._results) > self._keep or sum(r.size for r in self._results.values()) > self._chars
        ):
            self._results.popitem(last=False)

    def get(self, call_id: str) -> ToolResult | None:
        return self._results.get(call_id)
