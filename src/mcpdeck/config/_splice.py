"""Changing a JSON (or JSONC) document's text: only what changed, everything else byte for byte.

``ConfigStore`` changes the parsed document; :func:`rewrite` turns the difference between the
document before and after into edits of the original text, found by the JSON path of what
changed:

- a value that changed is replaced where it stands; a number that means the same (``30``
  and ``30.0``) is no change, so the user's spelling stays;
- a key (or array item) that went is cut with its own lines (and the comment lines right
  above it), or, on a shared line, with its comma; the comma before a last one that went
  goes too;
- a key that came is added after the object's last remaining key (an array item after the
  array's last one), on a line of its own indented as its siblings are, or on their line
  when they share one;
- an array of another length keeps the items that stayed and adds the new ones at its end;
  an object or array left with none of its old entries is written anew.

What is new is written in the file's own style: its indentation unit and line ending, its
space (or none) after ``:``, arrays of plain values on one line or one item a line as the
file mostly has them, an object on one line where its siblings are, a comma after the last
entry where the container has one (JSONC), and numbers without a needless ``.0``.

Whitespace, key order and comments outside what changed are kept. The text made is read
again and must give the new document; where it does not, or where there is no text to change
(a new or empty file), the whole document is written in the file's style instead.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, cast

from mcpdeck.config._json import load_json, strip_jsonc
from mcpdeck.errors import ConfigError

__all__ = ["render", "rewrite", "same_json"]

# Whitespace and comments between tokens (the text was read as JSONC before, so comments end).
_GAP = re.compile(r"(?:[ \t\r\n]+|//[^\n]*|/\*.*?\*/)*", re.DOTALL)
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_SCALAR = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null|NaN|-?Infinity")
_BLANK_REST = re.compile(r"[ \t]*(?://[^\n]*|/\*[^\n]*?\*/[ \t]*)*\r?(?:\n|$)")
_INDENT = re.compile(r"[ \t]*")
_COMMENT_LINE = re.compile(r"[ \t]*(?://[^\n]*|/\*[^\n]*?\*/[ \t]*)\r?\n")
_LARGEST_EXACT = 2**53


class _Unspliceable(Exception):
    """The text is not what the parsed document says it is; write the whole document instead."""


def same_json(a: object, b: object) -> bool:
    """Whether two JSON values mean the same: ``30`` is ``30.0``, ``true`` is not ``1``, key order does not count."""
    same_type = type(a) is type(b)
    if isinstance(a, bool) or isinstance(b, bool):
        return same_type and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        left, right = cast(dict[str, object], a), cast(dict[str, object], b)
        return left.keys() == right.keys() and all(same_json(value, right[key]) for key, value in left.items())
    if isinstance(a, list) and isinstance(b, list):
        first, second = cast(list[object], a), cast(list[object], b)
        return len(first) == len(second) and all(map(same_json, first, second))
    return same_type and a == b


# ----- the text's shape --------------------------------------------------------------------------


@dataclass
class _Value:
    """A value's place in the text; ``entries`` for an object or array (None for a plain value)."""

    start: int
    end: int
    entries: list[_Entry] | None = None
    is_object: bool = False


@dataclass
class _Entry:
    """An object's member (``key``) or an array's item (``key`` None) and the comma after it, if any."""

    key: str | None
    start: int
    value: _Value
    comma: int | None
    colon: str = ""
    """What stands between the key and its value (``": "``)."""

    @property
    def end(self) -> int:
        """Just past the entry, its comma included."""
        return self.comma + 1 if self.comma is not None else self.value.end


class _Reader:
    """Where each value of a JSON(C) text stands. The text was read already, so it is valid and at most 64 deep."""

    def __init__(self, text: str):
        self.text = text
        self.pos = 0

    def document(self) -> _Value:
        value = self._value()
        self._gap()
        if self.pos != len(self.text):
            raise _Unspliceable
        return value

    def _gap(self) -> None:
        self.pos = _GAP.match(self.text, self.pos).end()  # pyright: ignore[reportOptionalMemberAccess]

    def _expect(self, char: str) -> None:
        if not self.text.startswith(char, self.pos):
            raise _Unspliceable
        self.pos += 1

    def _value(self) -> _Value:
        self._gap()
        start = self.pos
        opener = self.text[start : start + 1]
        if opener in ("{", "["):
            return self._container(opener == "{")
        match = (_STRING if opener == '"' else _SCALAR).match(self.text, start)
        if match is None:
            raise _Unspliceable
        self.pos = match.end()
        return _Value(start, self.pos)

    def _container(self, is_object: bool) -> _Value:
        start = self.pos
        self.pos += 1
        closer = "}" if is_object else "]"
        entries: list[_Entry] = []
        while True:
            self._gap()
            if self.text.startswith(closer, self.pos):
                break
            entry_start = self.pos
            key: str | None = None
            key_end = entry_start
            if is_object:
                match = _STRING.match(self.text, self.pos)
                if match is None:
                    raise _Unspliceable
                key, key_end = json.loads(match.group()), match.end()
                self.pos = key_end
                self._gap()
                self._expect(":")
            value = self._value()
            colon = self.text[key_end : value.start] if is_object else ""
            self._gap()
            comma = None
            if self.text.startswith(",", self.pos):
                comma = self.pos
                self.pos += 1
            entries.append(_Entry(key, entry_start, value, comma, colon))
            if comma is None:
                self._gap()
                if not self.text.startswith(closer, self.pos):
                    raise _Unspliceable
                break
        self.pos += 1
        return _Value(start, self.pos, entries, is_object)


# ----- the file's style --------------------------------------------------------------------------


def _line_indent(text: str, pos: int) -> str:
    """The spaces and tabs that begin the line ``pos`` is on."""
    start = text.rfind("\n", 0, pos) + 1
    return _INDENT.match(text, start, pos).group()  # pyright: ignore[reportOptionalMemberAccess]


def _begins_line(text: str, pos: int) -> bool:
    """Whether only spaces and tabs stand before ``pos`` on its line."""
    start = text.rfind("\n", 0, pos) + 1
    return _INDENT.match(text, start, pos).end() == pos  # pyright: ignore[reportOptionalMemberAccess]


def _line_end(text: str, pos: int) -> int | None:
    """Where the line ``pos`` is on ends (before its line break), if only blanks and comments follow ``pos`` on it."""
    match = _BLANK_REST.match(text, pos)
    if match is None:
        return None
    end = match.end()
    if text.endswith("\n", 0, end):
        end -= 2 if text.endswith("\r\n", 0, end) else 1
    return end


def _comment_lines_above(text: str, start: int) -> int:
    """The start of the comment lines right above the line at ``start`` (they are about it), else ``start``."""
    while start > 0:
        above = text.rfind("\n", 0, start - 1) + 1
        if not _COMMENT_LINE.fullmatch(text, above, start):
            break
        start = above
    return start


def _next_line(text: str, end: int) -> int:
    """Just past the line break at ``end`` (from ``_line_end``)."""
    if text.startswith("\r\n", end):
        return end + 2
    return end + 1 if text.startswith("\n", end) else end


def _plain_value(value: object) -> bool:
    return not isinstance(value, dict | list)


@dataclass(frozen=True)
class _Style:
    """How the file is written, as far as new text needs to know."""

    unit: str = "  "
    newline: str = "\n"
    colon: str = ": "
    inline_lists: bool = True
    """Arrays of plain values on one line (``["-y", "pkg"]``), else one item a line."""

    @classmethod
    def of(cls, text: str, root: _Value | None) -> _Style:
        """The style of ``text``; the first container whose entries begin lines gives the indentation unit."""
        newline = "\r\n" if "\r\n" in text else "\n"
        if root is None:
            return cls(newline=newline)
        unit: str | None = None
        colon: str | None = None
        one_line = many_lines = 0
        queue = [root]
        for container in queue:  # breadth first: the shallowest levels decide
            entries = container.entries or []
            for entry in entries:
                if entry.value.entries is not None:
                    queue.append(entry.value)
                if unit is None and _begins_line(text, entry.start):
                    inner, outer = _line_indent(text, entry.start), _line_indent(text, container.start)
                    if inner.startswith(outer) and len(inner) > len(outer):
                        unit = inner[len(outer) :]
                if colon is None and container.is_object and re.fullmatch(r"[ \t]*:[ \t]*", entry.colon):
                    colon = entry.colon
            if not container.is_object and entries and all(entry.value.entries is None for entry in entries):
                if "\n" in text[container.start : container.end]:
                    many_lines += 1
                else:
                    one_line += 1
        return cls(
            unit=unit or cls.unit, newline=newline, colon=colon or cls.colon, inline_lists=one_line >= many_lines
        )


_DEFAULT_STYLE = _Style()


def _key(key: object) -> str:
    return json.dumps(str(key), ensure_ascii=False)


def _plain(value: object) -> str:
    if value is None or isinstance(value, bool | int | str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float):
        # A float that is a whole number is written as one: 30, not 30.0 (pydantic makes floats of what users type).
        if math.isfinite(value) and value.is_integer() and abs(value) < _LARGEST_EXACT:
            return str(int(value))
        return json.dumps(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def render(value: object, style: _Style = _DEFAULT_STYLE, indent: str = "", inline: bool | None = None) -> str:
    """``value`` as JSON text in ``style``, its first line at the end of a line indented by ``indent``.

    ``inline`` True writes containers on one line, False one entry a line; None: objects one
    member a line, arrays of plain values as the style has them.

    Raises:
        TypeError: Something in ``value`` is not JSON data.
    """
    if isinstance(value, dict):
        members = cast(dict[object, object], value)
        if not members:
            return "{}"
        if inline:
            return (
                "{"
                + ", ".join(_key(k) + style.colon + render(v, style, indent, True) for k, v in members.items())
                + "}"
            )
        inner = indent + style.unit
        lines = [inner + _key(k) + style.colon + render(v, style, inner) for k, v in members.items()]
        return "{" + style.newline + ("," + style.newline).join(lines) + style.newline + indent + "}"
    if isinstance(value, list):
        items = cast(list[object], value)
        if not items:
            return "[]"
        if inline or (inline is None and style.inline_lists and all(map(_plain_value, items))):
            return "[" + ", ".join(render(item, style, indent, True) for item in items) + "]"
        inner = indent + style.unit
        lines = [inner + render(item, style, inner) for item in items]
        return "[" + style.newline + ("," + style.newline).join(lines) + style.newline + indent + "]"
    return _plain(value)


# ----- the edits ---------------------------------------------------------------------------------


@dataclass
class _Splicer:
    """Collects the edits that turn the old document's text into the new document's."""

    text: str
    style: _Style
    cuts: list[tuple[int, int]] = field(default_factory=list[tuple[int, int]])
    puts: list[tuple[int, int, str]] = field(default_factory=list[tuple[int, int, str]])

    def change(self, node: _Value, old: object, new: object) -> None:
        if same_json(old, new):
            return
        if node.entries is not None and node.is_object and isinstance(old, dict) and isinstance(new, dict):
            self._object(node, cast(dict[str, object], old), cast(dict[str, object], new))
        elif node.entries is not None and not node.is_object and isinstance(old, list) and isinstance(new, list):
            self._array(node, cast(list[object], old), cast(list[object], new))
        else:
            self._replace(node, new)

    def _object(self, node: _Value, old: dict[str, object], new: dict[str, object]) -> None:
        entries = node.entries or []
        if [entry.key for entry in entries] != list(old):
            raise _Unspliceable
        kept = [entry for entry in entries if entry.key in new]
        for entry in kept:
            self.change(entry.value, old[cast(str, entry.key)], new[cast(str, entry.key)])
        gone = [entry for entry in entries if entry.key not in new]
        added: list[tuple[str | None, object]] = [(key, value) for key, value in new.items() if key not in old]
        self._reshape(node, new, kept, gone, added)

    def _array(self, node: _Value, old: list[object], new: list[object]) -> None:
        entries = node.entries or []
        if len(entries) != len(old):
            raise _Unspliceable
        if len(old) == len(new):
            for entry, before, after in zip(entries, old, new, strict=True):
                self.change(entry.value, before, after)
            return
        # The items that stayed, in order; what is left of the new list goes at the end.
        kept: list[_Entry] = []
        gone: list[_Entry] = []
        for entry, item in zip(entries, old, strict=True):
            if len(kept) < len(new) and same_json(item, new[len(kept)]):
                kept.append(entry)
            else:
                gone.append(entry)
        self._reshape(node, new, kept, gone, [(None, item) for item in new[len(kept) :]])

    def _replace(self, node: _Value, new: object) -> None:
        text = render(new, self.style, _line_indent(self.text, node.start), self._layout(node, new))
        self.puts.append((node.start, node.end, text))

    def _layout(self, node: _Value, new: object) -> bool | None:
        """A container replacing one of its kind is laid out as that one was: on one line (True) or not (False)."""
        if not node.entries or node.is_object != isinstance(new, dict) or not isinstance(new, dict | list):
            return None
        return "\n" not in self.text[node.start : node.end]

    def _reshape(
        self,
        node: _Value,
        new: object,
        kept: list[_Entry],
        gone: list[_Entry],
        added: list[tuple[str | None, object]],
    ) -> None:
        """Cut the entries that went and add the new ones after the last that stayed."""
        if not gone and not added:
            return
        if not kept:
            self._replace(node, new)
            return
        entries = node.entries or []
        for entry in gone:
            self.cuts.append(self._span(entries, entry))
        last, trailing = kept[-1], entries[-1].comma is not None
        if not added:
            if any(entry is entries[-1] for entry in gone) and not trailing and last.comma is not None:
                self.cuts.append((last.comma, last.comma + 1))  # it is the last now
            return
        line_end = _line_end(self.text, last.end)
        own_lines = line_end is not None and any(_begins_line(self.text, entry.start) for entry in kept)
        colon = last.colon if re.fullmatch(r"[ \t]*:[ \t]*", last.colon) else self.style.colon
        indent = self._indent(node, kept)
        pieces = [
            (_key(key) + colon if key is not None else "")
            + render(value, self.style, indent, self._inline(kept, value) if own_lines else True)
            for key, value in added
        ]
        if last.comma is None:
            self.puts.append((last.value.end, last.value.end, ","))
        if own_lines:
            assert line_end is not None
            ends = ["," if n < len(pieces) - 1 or trailing else "" for n in range(len(pieces))]
            block = "".join(self.style.newline + indent + piece + end for piece, end in zip(pieces, ends, strict=True))
            self.puts.append((line_end, line_end, block))
        else:
            self.puts.append((last.end, last.end, " " + ", ".join(pieces) + ("," if trailing else "")))

    def _span(self, entries: list[_Entry], entry: _Entry) -> tuple[int, int]:
        """The text an entry that went takes with it: its own lines, else what separates it from the one before."""
        text = self.text
        line_end = _line_end(text, entry.end)
        if line_end is not None and _begins_line(text, entry.start):
            return _comment_lines_above(text, text.rfind("\n", 0, entry.start) + 1), _next_line(text, line_end)
        index = [id(each) for each in entries].index(id(entry))
        if index:
            return entries[index - 1].end, entry.end
        return entry.start, _GAP.match(text, entry.end).end()  # pyright: ignore[reportOptionalMemberAccess]

    def _indent(self, node: _Value, kept: list[_Entry]) -> str:
        """The indentation of a new entry's line: its siblings', else one unit more than the container's line."""
        for entry in reversed(kept):
            if _begins_line(self.text, entry.start):
                return _line_indent(self.text, entry.start)
        return _line_indent(self.text, node.start) + self.style.unit

    def _inline(self, siblings: list[_Entry], value: object) -> bool | None:
        """A new object (or array) goes on one line where its siblings of that kind all are."""
        if not isinstance(value, dict | list):
            return None
        layouts = [
            "\n" not in self.text[entry.value.start : entry.value.end]
            for entry in siblings
            if entry.value.entries and entry.value.is_object == isinstance(value, dict)
        ]
        return all(layouts) if layouts else None

    def result(self) -> str:
        """The text with every edit made.

        Raises:
            _Unspliceable: Two edits overlap.
        """
        merged: list[list[int]] = []
        for start, end in sorted(self.cuts):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        edits = sorted([(start, end, "") for start, end in merged] + self.puts, key=lambda edit: (edit[0], edit[1]))
        out: list[str] = []
        pos = 0
        for start, end, replacement in edits:
            if start < pos:
                raise _Unspliceable
            out += (self.text[pos:start], replacement)
            pos = end
        out.append(self.text[pos:])
        return "".join(out)


def _reads_as(text: str, document: object) -> bool:
    try:
        return same_json(load_json(strip_jsonc(text), "(the changed text)"), document)
    except ConfigError:
        return False


def rewrite(text: str | None, old: dict[str, Any], new: dict[str, Any]) -> str:
    """The text of ``new``: ``text`` (which reads as ``old``) changed where ``new`` differs, else ``new`` written whole.

    Raises:
        TypeError: Something in ``new`` is not JSON data.
    """
    if text is None or not text.strip():
        return render(new) + "\n"
    try:
        root = _Reader(text).document()
    except _Unspliceable:
        root = None
    style = _Style.of(text, root)
    if root is not None:
        splicer = _Splicer(text, style)
        try:
            splicer.change(root, old, new)
            changed = splicer.result()
        except _Unspliceable:
            pass
        else:
            if _reads_as(changed, new):
                return changed
    return render(new, style) + (style.newline if text.endswith("\n") else "")
