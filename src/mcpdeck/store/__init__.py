"""The store: the history of tool calls and conversations, and what a fleet of ``serve`` replicas shares.

SQLite (the standard library's ``sqlite3``, the embedded default: one file) or PostgreSQL (psycopg 3,
``pip install 'mcpdeck[postgres]'``), with one schema for both (``_schema``: numbered migrations,
applied at start under a lock). Inside:

- ``_location``: where a store is (a path, ``sqlite:///...``, ``postgresql://...``), checked.
- ``_schema``: the migrations and the few words the two databases spell differently.
- ``_db``: one connection, SQLite or PostgreSQL, and the migrations run when it opens.
- ``_writer``: the thread that owns the connection and commits in groups, without a linger.
- ``_locks``: named locks taken without waiting, which a dead holder never keeps.
- ``_store``: an open store: its connection behind the writer, and its locks.
- ``_history``: ``History``, the records: calls, conversations, messages, secrets redacted.
- ``_approvals``: ``SessionApprovals``, what gateway clients allowed for their session, for every replica.
- ``_notices``: ``Listener``, a replica's one ``LISTEN`` connection on PostgreSQL, and the ``NOTIFY`` it sends;
  ``ConfigNotices``: a notice after each config write, heard by the replicas.
- ``_broadcast``: ``EventBroadcast``: on PostgreSQL, the live events each replica tells the others.
- ``_fleet``: ``Replica``: this process's heartbeat, the reaper of dead replicas' calls, retention.
- ``_rollups``: ``StoredMinutes``: each replica's calls a minute at a time (the console's Metrics page).
- ``_relay``: ``Relay``: messages between replicas on PostgreSQL (a row and a NOTIFY), answered or given up on.

Imports go one way: ``_location``, ``_schema`` ← ``_db`` ← ``_writer``, ``_locks`` ← ``_store`` ←
``_history`` ← ``_approvals`` ← ``_fleet`` ← ``_relay``; ``_history`` ← ``_rollups``;
``_store`` ← ``_notices`` ← ``_broadcast``.
"""

from mcpdeck._util.masking import Redactor
from mcpdeck.config import secrets_of
from mcpdeck.store._approvals import ORPHANED_FOR, SessionApprovals
from mcpdeck.store._broadcast import PAYLOAD_LIMIT, EventBroadcast, events_channel
from mcpdeck.store._fleet import HEARTBEAT, STALE_AFTER, Replica, default_replica_id
from mcpdeck.store._history import CALL_STATUSES, RESULT_CHARS, History, ToolCallRecord
from mcpdeck.store._location import StoreLocation, check_replica_id, parse_location
from mcpdeck.store._notices import ConfigNotices, Listener, config_channel
from mcpdeck.store._relay import Relay, Unreachable
from mcpdeck.store._rollups import StoredMinutes
from mcpdeck.store._schema import SCHEMA_VERSION
from mcpdeck.store._store import Store, default_history_path

__all__ = [
    "CALL_STATUSES",
    "HEARTBEAT",
    "ORPHANED_FOR",
    "PAYLOAD_LIMIT",
    "RESULT_CHARS",
    "SCHEMA_VERSION",
    "STALE_AFTER",
    "ConfigNotices",
    "EventBroadcast",
    "History",
    "Listener",
    "Redactor",
    "Relay",
    "Replica",
    "SessionApprovals",
    "Store",
    "StoreLocation",
    "StoredMinutes",
    "ToolCallRecord",
    "Unreachable",
    "check_replica_id",
    "config_channel",
    "default_history_path",
    "default_replica_id",
    "events_channel",
    "parse_location",
    "secrets_of",
]
