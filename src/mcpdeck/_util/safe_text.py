"""Text from a server made safe to print: control and invisible format characters shown escaped.

A server's tool names, descriptions, results, log lines and messages can hold escape
sequences that clear a line, move the cursor, set the window title or plant a hyperlink,
and bidi overrides that make text read differently from what it is. ``safe_text`` shows
each such character as an escape (``\\x1b``, ``\\u202e``), so what the user reads is what
the server sent, and nothing the server sent can act on the terminal.

Escaped: C0 controls (``\\n`` and ``\\t`` are kept in multi-line text), DEL, C1 controls,
every format character (bidi embeddings, overrides and isolates, marks, zero-width space,
word joiners, the BOM, soft hyphen, tag characters ...) except the zero-width joiner and
non-joiner that emoji and some scripts need, line and paragraph separators, and lone
surrogates (which cannot even be encoded for output).
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["UNSAFE_CHARACTERS", "safe_json", "safe_text", "storable"]

UNSAFE_CHARACTERS = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b\u200e\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ud800-\udfff\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e007f"
)
"""A regular-expression character class body of what is never printed as is (``\\t``, ``\\n`` aside)."""

_MULTILINE = re.compile(f"[{UNSAFE_CHARACTERS}]")
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_ONE_LINE = re.compile(f"[\t\n{UNSAFE_CHARACTERS}]")


_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def safe_text(text: str, *, multiline: bool = False) -> str:
    """``text`` with every control and invisible format character shown as an escape.

    Args:
        text: Anything a server (or a model) sent.
        multiline: Body text: keep ``\\n`` and ``\\t`` (``\\r\\n`` becomes ``\\n``). Otherwise
            they are escaped too, so the text stays on one line.
    """
    if multiline:
        if "\r\n" in text:
            text = text.replace("\r\n", "\n")
        return _MULTILINE.sub(_escape, text)
    return _ONE_LINE.sub(_escape, text)


def safe_json(data: Any, *, indent: int | None = None) -> str:
    """``data`` as JSON that is exact and safe to print.

    Non-ASCII text stays readable; what JSON leaves raw that a terminal would act on (DEL,
    C1 controls, bidi and other format characters, lone surrogates) is written as a
    ``\\uXXXX`` escape, which a JSON reader turns back into the same character.
    """
    text = json.dumps(data, indent=indent, ensure_ascii=False, default=str)
    return _MULTILINE.sub(_json_escape, text)


def storable(text: str) -> str:
    """``text`` as a database keeps it: NUL (which PostgreSQL's text cannot hold) and lone surrogates (which no
    encoding takes: a JSON string may carry one as ``\\ud800``) as U+FFFD. Either would fail the write of the
    row, and of every row written with it."""
    if text.isascii():  # (known without reading it)
        return text.replace("\x00", "\ufffd") if "\x00" in text else text
    return _UNSTORABLE.sub("\ufffd", text)
