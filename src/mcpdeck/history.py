"""History: every tool call and every conversation. A name kept for programs that import it: the
history lives in ``mcpdeck.store`` (SQLite or PostgreSQL), and these are its names.

``Host(history=History(...))`` records every call of a host; a call returns once its record is
committed. ``Agent(history=...)`` records its conversations.
"""

from mcpdeck.store import (
    RESULT_CHARS,
    SCHEMA_VERSION,
    History,
    Redactor,
    ToolCallRecord,
    default_history_path,
    secrets_of,
)

__all__ = [
    "RESULT_CHARS",
    "SCHEMA_VERSION",
    "History",
    "Redactor",
    "ToolCallRecord",
    "default_history_path",
    "secrets_of",
]
