"""Wrong tokens, counted so that guessing is slow and nobody else can lock the user out.

Both listening faces (``serve``'s guard and ``gateway --port``) ask this before they compare a
token. Counting wrong tokens by source address does not work on loopback: 127.0.0.0/8 has 16
million addresses and any local process may bind any of them. So a wrong token is counted
against **who sent it**:

- a loopback connection is known by the user that owns its socket (Linux: ``/proc/net/tcp``
  and ``tcp6``), whatever address it came from;
- anything else by its address (an IPv6 address by its /64, which one machine usually holds).

A sender past ``per_sender`` wrong tokens within ``window`` seconds, or any sender but the user
this process runs as while all senders together are past ``overall``, is refused (429) before
its token is even compared: a guesser learns nothing, right or wrong, until the window has
moved on. The user this process runs as is never refused a right token: the state file with
the token is theirs to read anyway, so their processes cannot be guessing, and nobody else's
guesses can lock them out. Their wrong tokens still count and get 429, so a broken script
hears about it.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import struct
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Guesses", "Sender", "socket_owner"]


@dataclass(frozen=True)
class Sender:
    """Who a request's wrong tokens are counted against."""

    key: str
    """``uid N`` (a local user) or the address (its /64 for IPv6)."""
    own: bool
    """The user this process runs as, on this machine: never refused a right token."""


def _hex_address(host: str) -> list[str]:
    """How ``/proc/net/tcp{,6}`` writes an address (several forms for IPv4, which a dual-stack socket maps)."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return []
    if isinstance(address, ipaddress.IPv4Address):
        mapped = ipaddress.IPv6Address(f"::ffff:{address}")
        return [f"{struct.unpack('<I', address.packed)[0]:08X}", _hex_v6(mapped)]
    return [_hex_v6(address)]


def _hex_v6(address: ipaddress.IPv6Address) -> str:
    packed = address.packed
    return "".join(f"{struct.unpack('<I', packed[i : i + 4])[0]:08X}" for i in range(0, 16, 4))


def socket_owner(client: tuple[str, int], server: tuple[str, int]) -> int | None:
    """The uid that owns the client end of a TCP connection on this machine, or None (not found, not Linux).

    Asked of the kernel by the connection's addresses and ports (netlink ``sock_diag``: tens of
    microseconds); where that is not allowed, read from ``/proc/net/tcp{,6}`` (slow with many sockets).
    """
    found = _diag_owner(client, server)
    return found if found is not None else _proc_owner(client, server)


_SOCK_DIAG_BY_FAMILY = 20
_NLMSG_ERROR = 2
_NOCOOKIE = 0xFFFFFFFF


def _diag_owner(client: tuple[str, int], server: tuple[str, int]) -> int | None:
    try:
        source, target = ipaddress.ip_address(client[0]), ipaddress.ip_address(server[0])
    except ValueError:
        return None
    if isinstance(source, ipaddress.IPv6Address) and isinstance(target, ipaddress.IPv6Address):
        if source.ipv4_mapped is not None and target.ipv4_mapped is not None:  # a dual-stack listener's view
            source, target = source.ipv4_mapped, target.ipv4_mapped
    if source.version != target.version:
        return None
    family = socket.AF_INET if source.version == 4 else socket.AF_INET6
    identity = (
        struct.pack("!HH", client[1], server[1]) + source.packed.ljust(16, b"\0") + target.packed.ljust(16, b"\0")
    )
    identity += struct.pack("=III", 0, _NOCOOKIE, _NOCOOKIE)
    request = struct.pack("=BBBxI", family, socket.IPPROTO_TCP, 0, 0xFFFFFFFF) + identity
    header = struct.pack("=IHHII", 16 + len(request), _SOCK_DIAG_BY_FAMILY, 1, 1, 0)  # NLM_F_REQUEST
    try:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 4) as diag:  # NETLINK_SOCK_DIAG
            diag.settimeout(1.0)
            diag.sendto(header + request, (0, 0))
            answer = diag.recv(4096)
    except (OSError, AttributeError):  # not Linux, or not allowed here
        return None
    if len(answer) < 88 or struct.unpack_from("=H", answer, 4)[0] == _NLMSG_ERROR:
        return None
    return int(struct.unpack_from("=I", answer, 80)[0])  # inet_diag_msg's idiag_uid


def _proc_owner(client: tuple[str, int], server: tuple[str, int]) -> int | None:
    ends = {f"{h}:{client[1]:04X}" for h in _hex_address(client[0])}
    ours = {f"{h}:{server[1]:04X}" for h in _hex_address(server[0])}
    if not ends or not ours:
        return None
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as lines:
                next(lines, None)
                for line in lines:
                    fields = line.split()
                    if len(fields) > 7 and fields[1] in ends and fields[2] in ours:
                        return int(fields[7])
        except OSError:
            continue
    return None


def _sender(client: tuple[str, int] | None, server: tuple[str, int] | None, own_uid: int) -> Sender:
    if client is None:
        return Sender("?", own=False)
    try:
        address = ipaddress.ip_address(client[0])
    except ValueError:
        return Sender(client[0], own=False)
    if address.is_loopback or (isinstance(address, ipaddress.IPv6Address) and _mapped_loopback(address)):
        uid = socket_owner(client, server) if server is not None else None
        if uid is not None:
            return Sender(f"uid {uid}", own=uid == own_uid)
        return Sender(str(address), own=False)
    if isinstance(address, ipaddress.IPv6Address):
        return Sender(str(ipaddress.ip_network(f"{address}/64", strict=False)), own=False)
    return Sender(str(address), own=False)


def _mapped_loopback(address: ipaddress.IPv6Address) -> bool:
    mapped = address.ipv4_mapped
    return mapped is not None and mapped.is_loopback


class Guesses:
    """Wrong tokens within a sliding window, per sender and overall (see the module's docstring)."""

    def __init__(self, per_sender: int = 10, overall: int = 100, window: float = 60.0):
        self.per_sender = per_sender
        self.overall = overall
        self.window = window
        self._seen: dict[str, deque[float]] = {}
        self._all: deque[float] = deque()
        self._own_uid = os.getuid() if hasattr(os, "getuid") else -1

    def sender(self, client: tuple[str, int] | None, server: tuple[str, int] | None) -> Sender:
        """Who a connection's wrong tokens count against."""
        return _sender(client, server, self._own_uid)

    def _trim(self, times: deque[float], now: float) -> deque[float]:
        while times and now - times[0] > self.window:
            times.popleft()
        return times

    def _wait(self, times: deque[float], limit: int, now: float) -> float:
        if len(self._trim(times, now)) < limit:
            return 0.0
        return max(self.window - (now - times[0]), 0.1)

    def busy(self) -> bool:
        """Whether any sender, or all of them together, are past their limit (then each request's sender matters)."""
        now = time.monotonic()
        if self._wait(self._all, self.overall, now):
            return True
        return any(self._wait(times, self.per_sender, now) for times in list(self._seen.values()))

    def wait(self, sender: Sender) -> float:
        """Seconds before ``sender`` may have a token compared again (0: now). The own user may always."""
        if sender.own:
            return 0.0
        now = time.monotonic()
        times = self._seen.get(sender.key)
        mine = self._wait(times, self.per_sender, now) if times is not None else 0.0
        if times is not None and not times:
            del self._seen[sender.key]
        return max(mine, self._wait(self._all, self.overall, now))

    def wrong(self, sender: Sender) -> float:
        """Count a wrong token; how long ``sender``'s wrong tokens are now refused for (0: not yet)."""
        now = time.monotonic()
        if len(self._seen) > 10_000:  # a flood of addresses must not grow this forever
            self._seen.clear()
        times = self._trim(self._seen.setdefault(sender.key, deque()), now)
        times.append(now)
        self._trim(self._all, now).append(now)
        return self._wait(times, self.per_sender + 1, now)

    def judge(
        self, client: tuple[str, int] | None, server: tuple[str, int] | None, right: Callable[[], bool]
    ) -> tuple[bool, float]:
        """Compare a token (``right()``) unless its sender must wait: ``(right, seconds to wait)``.

        ``(True, 0)``: let it in. ``(False, 0)``: a wrong token, counted (401). ``(False, s)``:
        refused for ``s`` more seconds (429), compared or not.
        """
        sender: Sender | None = None
        if self.busy():  # someone is past a limit: find out who this is before comparing anything
            sender = self.sender(client, server)
            if wait := self.wait(sender):
                return False, wait
        if right():
            return True, 0.0
        sender = sender or self.sender(client, server)
        return False, self.wrong(sender)
