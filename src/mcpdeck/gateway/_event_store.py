"""An in-memory SSE event store, so a client whose stream dropped can resume it (``Last-Event-ID``)."""

from __future__ import annotations

from collections import OrderedDict
from itertools import count

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp_types import JSONRPCMessage

__all__ = ["MemoryEventStore"]


class MemoryEventStore(EventStore):
    """Keeps the last ``limit`` events of all streams; older ones cannot be replayed."""

    def __init__(self, limit: int = 10_000):
        self._limit = limit
        self._events: OrderedDict[str, tuple[StreamId, JSONRPCMessage | None]] = OrderedDict()
        self._ids = count(1)

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        event_id = str(next(self._ids))
        self._events[event_id] = (stream_id, message)
        while len(self._events) > self._limit:
            self._events.popitem(last=False)
        return event_id

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        found = self._events.get(last_event_id)
        if found is None:
            return None
        stream_id = found[0]
        after = False
        for event_id, (stream, message) in list(self._events.items()):
            if after and stream == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
            after = after or event_id == last_event_id
        return stream_id
