"""A native tool's description and its parameters' descriptions, read from the function's docstring."""

from __future__ import annotations

import re

__all__ = ["parse_docstring"]


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """A docstring's description and its parameters' descriptions.

    The ``docstring-parser`` library reads the docstring, in whichever style it is written:
    Google (``Args:`` with ``name (type): text``, continued on indented lines), reST
    (``:param name: text``) or numpy. The description is the text before the first section,
    its paragraphs' lines joined; a parameter's description is joined into one line.

    Args:
        doc: The docstring (None: no docstring).

    Returns:
        ``(description, {parameter: description})``.
    """
    # Slower than the hand-written parser it replaced, and an import (bench/RESULTS.md); both
    # are paid once per tool when it is made, never per call, and the import only then.
    import docstring_parser

    if not doc:
        return "", {}
    parsed = docstring_parser.parse(doc)
    params: dict[str, str] = {}
    for param in parsed.params:
        if param.description is not None:
            lines = (line.strip() for line in param.description.splitlines())
            params[param.arg_name.lstrip("*")] = " ".join(lines).strip()
    return _unwrap((parsed.description or "").splitlines()), params


_BLOCK_LINE = re.compile(r"\s|[-*+>|#]|\d+[.)]\s")


def _unwrap(lines: list[str]) -> str:
    """Paragraphs' lines joined into one line each (lists, indented blocks and tables kept as they are)."""
    out: list[str] = []
    for line in lines:
        text = line.rstrip()
        if out and out[-1] and text and not _BLOCK_LINE.match(text) and not _BLOCK_LINE.match(out[-1]):
            out[-1] = f"{out[-1]} {text}"
        else:
            out.append(text)
    return "\n".join(out).strip()
