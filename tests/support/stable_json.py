"""JSON output without what differs between two runs of one command (times, process ids), to compare two
ways of running it."""

from __future__ import annotations

from typing import Any

VOLATILE = {"connectedAt", "pid", "duration", "errorAt"}
"""What differs between two runs of the same command: times, process ids."""


def stable(data: Any) -> Any:
    """``data`` without volatile fields, at any depth."""
    if isinstance(data, dict):
        return {k: stable(v) for k, v in data.items() if k not in VOLATILE}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(data, list):
        return [stable(v) for v in data]  # pyright: ignore[reportUnknownVariableType]
    return data
