"""One server: a supervisor task that owns its ``mcp.Client``, its state and its lists.

``ServerConnection`` is the face ``Host`` uses. Behind it, each job has its own module:

- ``_supervisor``: the state machine and the long-lived task that runs the sessions;
- ``_session``: one live session, whose state is thrown away with it;
- ``_opening`` and ``_protocol``: opening transports (streamable HTTP falling back to SSE,
  stdio, in-process) and the protocol era (the ``server/discover`` probe, what was learnt);
- ``_errors``: errors from transports and the SDK in one clear sentence;
- ``_context``: what they all share (the server's name, its config, its log, masking).
"""

from mcpdeck.config import InProcessServer
from mcpdeck.connection._connection import ProgressCallback, ServerConnection
from mcpdeck.connection._errors import describe_error
from mcpdeck.status import RetryPolicy, ServerState, ServerStatus

__all__ = [
    "InProcessServer",
    "ProgressCallback",
    "RetryPolicy",
    "ServerConnection",
    "ServerState",
    "ServerStatus",
    "describe_error",
]
