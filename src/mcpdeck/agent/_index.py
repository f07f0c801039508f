"""``ToolIndex``: a BM25F index of tool specs, and the search over it.

::

    index = ToolIndex.for_tools(host.catalog)          # built once per catalog version
    for spec, score in index.search("read a file", limit=5): ...

The tool's name, its server's name, its description and its arguments (names, descriptions,
enum values) are separate fields, the name weighing most. A query that is a tool's exact name
(full or original, ``-``/``_``/spaces alike) ranks that tool first. The words are those of
``_words``; a query word no tool has is tried as a prefix ("calc" finds "calculate"), and a
query word's synonyms count too, for less.
"""

from __future__ import annotations

import bisect
import math
import re
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from mcpdeck.agent._words import surface, synonyms, tokenize
from mcpdeck.catalog import PREFIX
from mcpdeck.providers import ToolSpec

__all__ = ["ToolIndex"]

K1 = 1.2
"""BM25 term-frequency saturation."""
FIELDS: dict[str, tuple[float, float]] = {
    "name": (3.0, 0.75),
    "name_words": (1.0, 0.75),
    "server": (1.5, 0.5),
    "description": (1.0, 0.75),
    "arguments": (0.5, 0.75),
}
"""Each field's (weight, length normalisation b)."""
PREFIX_WEIGHT = 0.5
"""What a word found only as the prefix of indexed words counts for."""
SYNONYM_WEIGHT = 0.6
"""What a query word's synonym counts for."""
_MAX_DESCRIPTION = 4000  # characters of a description that are indexed
_MAX_PROPERTIES = 60  # argument names indexed per tool
_MAX_DEPTH = 4  # how deep into nested argument schemas
_CACHE_SIZE = 8
_SEPARATORS = re.compile(r"[\s_-]+")


def _counts(terms: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    get = counts.get
    for term in terms:
        counts[term] = get(term, 0) + 1
    return counts


def _split_name(spec: ToolSpec) -> tuple[str, str]:
    """``(server, tool name)`` of a spec: a catalog tool's own, else read from ``mcp__server__tool``."""
    server = getattr(spec, "server", None)
    original = getattr(spec, "original_name", None)
    if isinstance(server, str) and isinstance(original, str):
        return server, original
    name = spec.name
    if name.startswith(PREFIX) and "__" in name[len(PREFIX) :]:
        server, _, tool_name = name[len(PREFIX) :].partition("__")
        return server, tool_name
    return "", name


_NESTED = frozenset({"properties", "items", "anyOf", "oneOf", "allOf"})
_COMBINERS = ("anyOf", "oneOf", "allOf")


def _argument_text(node: dict[str, Any], out: list[str], depth: int = 0) -> None:
    """The names, descriptions and string enum values of the arguments in a JSON Schema (bounded)."""
    properties = node.get("properties")
    if type(properties) is dict:
        for key, sub in list(cast(dict[str, Any], properties).items())[:_MAX_PROPERTIES]:
            out.append(key)
            if type(sub) is not dict:
                continue
            sub_node = cast(dict[str, Any], sub)
            description = sub_node.get("description")
            if type(description) is str:
                out.append(description[:500])
            enum = sub_node.get("enum")
            if type(enum) is list:
                out.extend(value for value in cast(list[Any], enum)[:20] if type(value) is str)
            if depth < _MAX_DEPTH and len(out) < _MAX_PROPERTIES * 2 and not _NESTED.isdisjoint(sub_node):
                _argument_text(sub_node, out, depth + 1)
    if depth >= _MAX_DEPTH:
        return
    items = node.get("items")
    if type(items) is dict and not _NESTED.isdisjoint(cast(dict[str, Any], items)):
        _argument_text(cast(dict[str, Any], items), out, depth + 1)
    for key in _COMBINERS:
        options = node.get(key)
        if type(options) is list:
            for option in cast(list[Any], options)[:10]:
                if type(option) is dict:
                    _argument_text(cast(dict[str, Any], option), out, depth + 1)


def _plain(value: Any) -> Any:
    """A JSON value with every mapping a dict and every sequence a list (schemas given as other mappings)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in cast(Mapping[Any, Any], value).items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in cast(Sequence[Any], value)]
    return value


_Fields = tuple[tuple[dict[str, int], int], ...]
"""Per field (in ``FIELDS`` order): each term's count, and the field's length in terms."""
_DOCUMENTS: dict[tuple[str, str, str, str], tuple[Mapping[str, Any], _Fields]] = {}
_MAX_DOCUMENTS = 20_000


def _document(spec: ToolSpec, server: str, name: str) -> _Fields:
    """The term counts of each field of a tool.

    Kept per (name, server, title, description) and schema object, so a new catalog version
    re-tokenizes only the tools that changed.
    """
    title = getattr(spec, "title", None)
    name_text = f"{name} {title}" if isinstance(title, str) and title else name
    description = spec.description or ""
    schema = spec.input_schema
    key = (spec.name, server, name_text, description)
    known = _DOCUMENTS.get(key)
    if known is not None and known[0] is schema:
        return known[1]
    arguments: list[str] = []
    plain: dict[str, Any] = schema if isinstance(schema, dict) else _plain(schema)
    _argument_text(plain, arguments)
    fields = {
        "name": tokenize(name_text),
        "name_words": surface(name_text),
        "server": tokenize(server),
        "description": tokenize(description[:_MAX_DESCRIPTION]),
        "arguments": tokenize(" ".join(arguments)),
    }
    document = tuple((_counts(fields[field_name]), len(fields[field_name])) for field_name in FIELDS)
    if len(_DOCUMENTS) >= _MAX_DOCUMENTS:
        _DOCUMENTS.clear()
    _DOCUMENTS[key] = (schema, document)
    return document


def _exact_key(text: str) -> str:
    return _SEPARATORS.sub("_", text.strip().lower())


@dataclass
class _Cached:
    catalog: object
    extras: tuple[ToolSpec, ...]
    index: ToolIndex


_CACHE: OrderedDict[tuple[int, int, tuple[int, ...]], _Cached] = OrderedDict()
# Keyed by identity (a Catalog is not hashable by content), safe since each entry holds the
# catalog and the extras, so no id is reused while cached. Kept because building the index of
# a big catalog is costly (bench/RESULTS.md) and would be paid on every agent turn; a cached
# turn finds it in a dict.


class ToolIndex:
    """A BM25F index of tool specs; immutable once built.

    Build it with ``ToolIndex(tools)``, or with ``ToolIndex.for_tools(catalog, extra)``, which
    returns the same index again while the catalog's version and the extra tools are the same.
    """

    def __init__(self, tools: Iterable[ToolSpec]):
        """Index ``tools`` (any ``ToolSpec``: catalog tools, native tools, tool definitions)."""
        self._tools: list[ToolSpec] = list(tools)
        self._exact: dict[str, list[int]] = {}
        documents: list[_Fields] = []
        for position, spec in enumerate(self._tools):
            server, name = _split_name(spec)
            for key in {_exact_key(spec.name), _exact_key(name)}:
                self._exact.setdefault(key, []).append(position)
            documents.append(_document(spec, server, name))
        total = len(self._tools)
        averages = [(sum(doc[i][1] for doc in documents) / total if total else 0.0) or 1.0 for i in range(len(FIELDS))]
        # Postings are flat lists [tool, tf, tool, tf, ...] in tool order, where tf is the
        # BM25F pseudo-frequency: each field's count, weighted and normalised by its length.
        postings: dict[str, list[float]] = {}
        get = postings.get
        for i, (weight, b) in enumerate(FIELDS.values()):
            scale = b / averages[i]
            for position, document in enumerate(documents):
                counts, length = document[i]
                if not counts:
                    continue
                norm = weight / (1.0 - b + scale * length)
                for term, count in counts.items():
                    entry = get(term)
                    if entry is None:
                        postings[term] = [position, count * norm]
                    elif entry[-2] == position:
                        entry[-1] += count * norm
                    else:
                        entry.append(position)
                        entry.append(count * norm)
        self._postings = postings
        self._vocabulary: list[str] | None = None

    @classmethod
    def for_tools(cls, catalog: Iterable[ToolSpec], extra: Sequence[ToolSpec] = ()) -> ToolIndex:
        """The index of ``extra`` and the catalog's tools, reused while neither changes.

        A ``Catalog`` (anything with an int ``version``) is cached by its identity and
        version and the identities of the extra tools, in a small LRU shared by the process;
        any other iterable is indexed afresh.
        """
        version = getattr(catalog, "version", None)
        extras = tuple(extra)
        if not isinstance(version, int):
            return cls([*extras, *catalog])
        key = (id(catalog), version, tuple(id(spec) for spec in extras))
        entry = _CACHE.get(key)
        if entry is not None and entry.catalog is catalog and type(entry.index) is cls:
            _CACHE.move_to_end(key)
            return entry.index
        index = cls([*extras, *catalog])
        _CACHE[key] = _Cached(catalog, extras, index)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
        return index

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def tools(self) -> list[ToolSpec]:
        """The indexed tools, in order."""
        return list(self._tools)

    def _expand(self, term: str) -> list[str]:
        """Indexed terms that start with ``term`` (at most 10)."""
        if self._vocabulary is None:
            self._vocabulary = sorted(self._postings)
        vocabulary = self._vocabulary
        start = bisect.bisect_left(vocabulary, term)
        found: list[str] = []
        for candidate in vocabulary[start : start + 10]:
            if not candidate.startswith(term):
                break
            found.append(candidate)
        return found

    def search(self, query: str, limit: int = 5) -> list[tuple[ToolSpec, float]]:
        """The tools that best match ``query``, best first, with their scores (all > 0).

        Args:
            query: Words saying what the tool should do, or a tool's exact name.
            limit: How many tools at most.
        """
        if limit <= 0 or not self._tools:
            return []
        totals: dict[int, float] = {}
        total = len(self._tools)
        for term in dict.fromkeys([*tokenize(query), *surface(query)]):
            matches = [(term, 1.0)] if term in self._postings else []
            if term[0] != "=":
                matches.extend((other, SYNONYM_WEIGHT) for other in synonyms(term) if other in self._postings)
                if not matches and len(term) >= 3 and not term.isdigit():
                    matches = [(candidate, PREFIX_WEIGHT) for candidate in self._expand(term)]
            for candidate, weight in matches:
                entry = self._postings[candidate]
                found = len(entry) // 2
                factor = weight * math.log(1.0 + (total - found + 0.5) / (found + 0.5))  # weight x idf
                for at in range(0, len(entry), 2):
                    position, tf = int(entry[at]), entry[at + 1]
                    totals[position] = totals.get(position, 0.0) + factor * tf / (K1 + tf)
        exact = self._exact.get(_exact_key(query), [])
        if exact:
            bonus = max(totals.values(), default=0.0) + 1.0
            for position in exact:
                totals[position] = totals.get(position, 0.0) + bonus
        ranked = sorted((item for item in totals.items() if item[1] > 0), key=lambda item: (-item[1], item[0]))
        return [(self._tools[position], score) for position, score in ranked[:limit]]
