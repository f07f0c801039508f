"""Strict reading of JSON config text: one meaning or an error that says where.

``json.loads`` keeps the last of two equal keys without a word, and recurses once per level
of nesting. A config read that way can lose a ``deny`` rule to a second ``"permissions"``
key, or end in a traceback on a file nested 100,000 deep. :func:`load_json` refuses both,
naming the key path and the line. :func:`strip_jsonc` turns JSON with comments and trailing
commas (JSONC: VS Code's files, and mcpdeck's own when the user writes comments) into JSON of
the same lines and columns.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from mcpdeck.errors import ConfigError

__all__ = ["MAX_DEPTH", "load_json", "strip_jsonc"]

MAX_DEPTH = 64
"""How deeply objects and arrays may nest in a config file (real ones need fewer than ten)."""

# A JSON string, to its closing quote or (unterminated) to the end of its line: never backtracks.
_STRING = r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"?'
# Everything up to the next comment (or trailing comma), strings included; greedy, so it never backtracks.
_UP_TO_COMMENT = re.compile(rf"(?:[^\"/]+|{_STRING}|/(?![/*]))*")
_UP_TO_TRAILING_COMMA = re.compile(rf"(?:[^\",]+|{_STRING}|,(?!\s*[}}\]]))*")


def _blank(comment: str) -> str:
    """Spaces as long as ``comment``, keeping its newlines."""
    if "\n" not in comment:
        return " " * len(comment)
    return "\n".join(" " * len(line) for line in comment.split("\n"))


def strip_jsonc(text: str) -> str:
    """JSONC to JSON in linear time: comments, then trailing commas, become spaces.

    Each pass visits every character once: the text between comments (or trailing commas)
    is skipped by one pattern that never backtracks, a block comment's end is found with
    ``str.find``. Newlines inside comments are kept, so the lines and columns of a later
    parse error stay true. An unterminated ``/*`` runs to the end of the text.
    """
    out: list[str] = []
    pos = 0
    while (at := _UP_TO_COMMENT.match(text, pos).end()) < len(text):  # pyright: ignore[reportOptionalMemberAccess]
        if text.startswith("//", at):
            end = text.find("\n", at)
        else:
            end = text.find("*/", at + 2)
            end = end + 2 if end != -1 else end
        end = len(text) if end == -1 else end
        out += (text[pos:at], _blank(text[at:end]))
        pos = end
    out.append(text[pos:])
    text, out, pos = "".join(out), [], 0
    while (at := _UP_TO_TRAILING_COMMA.match(text, pos).end()) < len(text):  # pyright: ignore[reportOptionalMemberAccess]
        out += (text[pos:at], " ")
        pos = at + 1
    out.append(text[pos:])
    return "".join(out)


# A string (with its escapes) or one structural character; everything else is skipped.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\],:]', re.DOTALL)


@dataclass
class _Frame:
    """One open object (``keys`` holds its keys so far) or array (``keys`` is None) during the scan."""

    keys: set[str] | None
    at: str | int = field(default=0)
    """The current key, or the current array index."""


class _Duplicate(Exception):
    """Raised by the pairs hook at the first key given twice in one object."""


def _no_duplicates(items: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(items)
    if len(found) != len(items):
        raise _Duplicate
    return found


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _where(path: list[str | int]) -> str:
    if not path:
        return "at the top level"
    shown = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path).removeprefix(".")
    return f"in {shown}"


def _first_problem(text: str, source: str) -> ConfigError | None:
    """Walk valid JSON ``text`` once (no recursion): the first too-deep level or repeated key."""
    stack: list[_Frame] = []
    expect_key = False
    for match in _TOKEN.finditer(text):
        token = match[0]
        if token in "{[":
            if len(stack) >= MAX_DEPTH:
                return ConfigError(
                    f"nested more than {MAX_DEPTH} levels deep; a config file is a few levels of objects, "
                    "so check that this is the right file",
                    path=source,
                    line=_line_of(text, match.start()),
                )
            stack.append(_Frame(set() if token == "{" else None))
            expect_key = token == "{"
        elif token in "}]":
            stack.pop()
            expect_key = False
        elif token == ",":
            top = stack[-1]
            if top.keys is None and isinstance(top.at, int):
                top.at += 1
            expect_key = top.keys is not None
        elif token[0] == '"' and expect_key:
            expect_key = False
            top = stack[-1]
            key: str = json.loads(token)
            if top.keys is None:
                continue
            if key in top.keys:
                return _repeated(key, [frame.at for frame in stack[:-1]], source, _line_of(text, match.start()))
            top.keys.add(key)
            top.at = key
    return None


def _repeated(key: str, path: list[str | int], source: str, line: int) -> ConfigError:
    if path == ["mcpServers"]:
        return ConfigError(f"server {key!r} is defined twice; remove or rename one of them", path=source, line=line)
    return ConfigError(
        f"the key {json.dumps(key)} is given twice ({_where(path)}); JSON keeps only the last one, "
        "so remove or merge one of them",
        path=source,
        line=line,
    )


def load_json(text: str, source: str) -> Any:
    """Parse JSON ``text`` of the file ``source``, refusing repeated keys and deep nesting.

    Raises:
        ConfigError: Not valid JSON (with line and column), a key given twice in one object
            (with its key path and the line of the second), or nesting deeper than
            :data:`MAX_DEPTH` (with the line).
    """
    parsed = True
    data: Any = None
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"not valid JSON: {error.msg} (column {error.colno})", path=source, line=error.lineno
        ) from None
    except (_Duplicate, RecursionError):
        parsed = False
    # The scan also runs on what parsed: nesting below Python's recursion limit can still be too deep.
    problem = _first_problem(text, source)
    if problem is not None:
        raise problem
    if not parsed:  # the scan found nothing the parser did: should not happen, but never pass it on
        raise ConfigError("cannot be read unambiguously (repeated keys or too deep nesting)", path=source)
    return data
