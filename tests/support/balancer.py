"""A real HAProxy, or a real nginx, in front of ``mcpdeck serve`` replicas, with docs/fleet.md's configuration.

The configurations are the page's own blocks, read from it and edited only where the page tells its reader to
(``haproxy_config``, ``nginx_config``): the listening addresses, and the lines written once per replica, made
from the page's first one with each replica's id and address. A page whose block cannot be edited that way is
an error (``DocsBlockError``), so what the tests run is what the page shows.

``haproxy(folder, {"r1": port, ...})`` runs HAProxy in the foreground and yields its port and its stats port;
``until_states`` waits for its health checks to see each replica ``UP`` or ``DOWN``. Every answer it relays
says which replica answered (``X-Mcpdeck-Replica``), so a test knows where a request without a session went.
``nginx(folder, {...})`` runs open-source nginx (no active health checks, no stats) and yields its port.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2

from tests.helpers import ROOT, descendants, kill
from tests.support.replicas import START

__all__ = [
    "FLEET_DOCS",
    "HAPROXY",
    "NGINX",
    "NGINX_PROCESS",
    "REPLICA_HEADER",
    "DocsBlockError",
    "docs_block",
    "free_port",
    "haproxy",
    "haproxy_config",
    "nginx",
    "nginx_config",
    "server_states",
    "until_states",
]

HAPROXY = os.environ.get("MCPDECK_HAPROXY", "/usr/sbin/haproxy")
"""scripts/setup-tests installs it (Debian's ``haproxy``) when it is missing."""
NGINX = os.environ.get("MCPDECK_NGINX", "/usr/sbin/nginx")
"""scripts/setup-tests installs it (Debian's ``nginx``) when it is missing."""
REPLICA_HEADER = "x-mcpdeck-replica"
"""The header HAProxy adds to each answer: the name of the server (replica) that gave it."""

NGINX_PROCESS = """\
# One process in the foreground, everything it writes in the test's folder (not docs/fleet.md's part).
daemon off;
master_process off;
pid {folder}/nginx.pid;
error_log {folder}/nginx-error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {folder}/body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
{site}
}}
"""

FLEET_DOCS = ROOT / "docs" / "fleet.md"
"""The page whose HAProxy and nginx blocks the tests run, filled in as its reader fills them in."""
_NAME, _AT = "\0name\0", "\0at\0"


class DocsBlockError(ValueError):
    """A block of docs/fleet.md that cannot be filled in the way the page tells its reader to."""


def docs_block(language: str, page: str | None = None) -> str:
    """The one ```` ```language ```` block of docs/fleet.md (or of the text ``page``), as it stands there."""
    text = FLEET_DOCS.read_text(encoding="utf-8") if page is None else page
    blocks: list[str] = re.findall(rf"^```{re.escape(language)}\n(.*?)^```[ \t]*$", text, re.S | re.M)
    if len(blocks) != 1:
        raise DocsBlockError(
            f"docs/fleet.md must show exactly one ```{language} block (the tests run it), not {len(blocks)}"
        )
    return blocks[0]


def _section(rows: list[str], header: str | None) -> range:
    """The rows of the HAProxy section that begins with the line ``header`` (None: every row)."""
    if header is None:
        return range(len(rows))
    starts = [n for n, row in enumerate(rows) if row.rstrip() == header]
    if len(starts) != 1:
        raise DocsBlockError(f"docs/fleet.md's configuration must have one section `{header}`, not {len(starts)}")
    end = starts[0] + 1
    while end < len(rows) and (not rows[end].strip() or rows[end][0].isspace() or rows[end].startswith("#")):
        end += 1
    return range(starts[0] + 1, end)


def _set(block: str, what: str, pattern: str, value: str, section: str | None = None) -> str:
    """``block`` with the group ``at`` of the one line matching ``pattern`` (in ``section``) set to ``value``."""
    rows = block.splitlines(keepends=True)
    found = [(n, match) for n in _section(rows, section) if (match := re.fullmatch(pattern, rows[n].rstrip("\n")))]
    if len(found) != 1:
        raise DocsBlockError(f"docs/fleet.md's configuration must have one {what}, not {len(found)}")
    n, match = found[0]
    rows[n] = rows[n][: match.start("at")] + value + rows[n][match.end("at") :]
    return "".join(rows)


def _per_replica(block: str, what: str, pattern: str, replicas: Mapping[str, str], shown: dict[str, str]) -> str:
    """``block`` with its lines matching ``pattern`` (one per replica, together) replaced by one per ``replicas``
    (name: address), each made from the docs' own as the docs make theirs: the same line but for the replica's id
    (the group ``name``) and address (``at``). A line without a name is the replica's whose address it has.
    ``shown``: the replicas the docs show (name: address), filled in by the first call, checked by the next."""
    rows = block.splitlines(keepends=True)
    found = [(n, match) for n, row in enumerate(rows) if (match := re.fullmatch(pattern, row.rstrip("\n")))]
    if not found:
        raise DocsBlockError(f"docs/fleet.md's configuration has no {what} (one per replica)")
    first, last = found[0][0], found[-1][0]
    if [n for n, _ in found] != list(range(first, last + 1)):
        raise DocsBlockError(f"docs/fleet.md's {what} must be together, one line per replica, nothing between them")
    names = {at: name for name, at in shown.items()}
    lines: dict[str, str] = {}
    for _, match in found:
        at, name = match.groupdict().get("at"), match.groupdict().get("name")
        name = name or names.get(at or "")
        if name is None:
            raise DocsBlockError(f"docs/fleet.md's {what} name an address no other line gives a replica: {at}")
        template = match.string if at is None else match.string.replace(at, _AT)
        lines[name] = re.sub(rf"(?<![\w-]){re.escape(name)}(?![\w-])", _NAME, template)
        if at is not None and shown.setdefault(name, at) != at:
            raise DocsBlockError(f"docs/fleet.md's {what} give {name} the address {at}, other lines {shown[name]}")
    if list(lines) != list(shown):
        raise DocsBlockError(f"docs/fleet.md's {what} are for {', '.join(lines)}, other lines for {', '.join(shown)}")
    if len(set(lines.values())) != 1:
        raise DocsBlockError(
            f"docs/fleet.md's {what} differ beyond each replica's id and address: {[m.string for _, m in found]}; "
            "write each as the first with its replica's id and address, as the page tells its reader to"
        )
    template = next(iter(lines.values()))
    rows[first : last + 1] = [template.replace(_NAME, name).replace(_AT, at) + "\n" for name, at in replicas.items()]
    return "".join(rows)


def haproxy_config(port: int, stats: int, replicas: Mapping[str, str], page: str | None = None) -> str:
    """docs/fleet.md's HAProxy configuration edited as the page tells its reader to, and in nothing else: the
    frontend's ``bind`` on 127.0.0.1:``port``, the stats page's on 127.0.0.1:``stats``, and one ``use-server``
    rule and one ``server`` line per replica of ``replicas`` (name: ``host:port``), each the docs' with the
    replica's id and address. ``page``: the text of docs/fleet.md (read when not given)."""
    block = docs_block("haproxy", page)
    block = _set(block, "`bind` in `frontend mcp`", r"\s+bind (?P<at>\S+)", f"127.0.0.1:{port}", "frontend mcp")
    block = _set(block, "`bind` in `listen stats`", r"\s+bind (?P<at>\S+)", f"127.0.0.1:{stats}", "listen stats")
    shown: dict[str, str] = {}
    block = _per_replica(block, "`server` lines", r"\s+server (?P<name>\S+) (?P<at>\S+)(?: .*)?", replicas, shown)
    return _per_replica(block, "`use-server` rules", r"\s+use-server (?P<name>\S+) if .*", replicas, shown)


def nginx_config(listen: str, replicas: Mapping[str, str], page: str | None = None) -> str:
    """docs/fleet.md's nginx site edited as the page tells its reader to, and in nothing else: ``listen`` on
    ``listen``, and one ``map`` entry and one ``upstream`` server per replica of ``replicas`` (name:
    ``host:port``), each the docs' with the replica's id and address. ``page``: the text of docs/fleet.md."""
    block = _set(docs_block("nginx", page), "`listen`", r"\s+listen (?P<at>[^;\s]+);.*", listen)
    shown: dict[str, str] = {}
    block = _per_replica(block, "`map` entries", r"\s+~\^(?P<name>[\w-]+)\\\.\s+(?P<at>[^;\s]+);.*", replicas, shown)
    return _per_replica(block, "`upstream` servers", r"\s+server (?P<at>[\w.:\[\]-]+)(?: [^;{]*)?;.*", replicas, shown)


@asynccontextmanager
async def nginx(folder: Path, replicas: dict[str, int], port: int = 0) -> AsyncGenerator[int]:
    """nginx in the foreground with docs/fleet.md's site in front of ``replicas``, on ``port`` (0: a free one);
    yields its port once it answers."""
    assert shutil.which(NGINX), f"nginx is missing at {NGINX}: run scripts/setup-tests"
    port = port or free_port()
    site = nginx_config(f"127.0.0.1:{port}", {name: f"127.0.0.1:{at}" for name, at in replicas.items()})
    config = folder / "nginx.conf"
    indented = "\n".join(f"    {line}" if line else line for line in site.splitlines())
    config.write_text(NGINX_PROCESS.format(folder=folder, site=indented))
    process = await anyio.open_process(
        [NGINX, "-p", str(folder), "-e", str(folder / "nginx-error.log"), "-c", str(config)]
    )
    try:
        with anyio.fail_after(START):  # it binds its port a moment after it starts
            while True:
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=1):
                        break
                except OSError:
                    assert process.returncode is None, "nginx stopped; see " + str(folder / "nginx-error.log")
                    await anyio.sleep(0.05)
        yield port
    finally:
        kill({process.pid, *descendants(process.pid)})
        with anyio.move_on_after(5, shield=True):
            await process.wait()
        await process.aclose()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@asynccontextmanager
async def haproxy(folder: Path, replicas: dict[str, int], port: int = 0) -> AsyncGenerator[tuple[int, int]]:
    """HAProxy in the foreground with docs/fleet.md's configuration in front of ``replicas``, on ``port`` (0: a free
    one); yields its port and stats port once its stats page answers."""
    assert shutil.which(HAPROXY), f"HAProxy is missing at {HAPROXY}: run scripts/setup-tests"
    port, stats = port or free_port(), free_port()
    config = folder / "haproxy.cfg"
    config.write_text(haproxy_config(port, stats, {name: f"127.0.0.1:{at}" for name, at in replicas.items()}))
    process = await anyio.open_process([HAPROXY, "-db", "-f", str(config)])
    try:
        with anyio.fail_after(START):  # it binds its ports a moment after it starts
            while True:
                try:
                    await server_states(stats)
                    break
                except httpx2.ConnectError:
                    assert process.returncode is None, "HAProxy stopped; its config is in " + str(config)
                    await anyio.sleep(0.05)
        yield port, stats
    finally:
        kill({process.pid, *descendants(process.pid)})
        with anyio.move_on_after(5, shield=True):
            await process.wait()
        await process.aclose()


async def server_states(stats: int) -> dict[str, str]:
    """Each server's state as HAProxy sees it (``UP``, ``DOWN``, ...), from its stats page."""
    async with httpx2.AsyncClient(timeout=5) as http:
        csv = (await http.get(f"http://127.0.0.1:{stats}/stats;csv")).text
    lines = [line.split(",") for line in csv.splitlines() if line and not line.startswith("#")]
    return {row[1]: row[17] for row in lines if row[0] == "replicas" and row[1] not in ("FRONTEND", "BACKEND")}


async def until_states(stats: int, wanted: dict[str, str]) -> None:
    """Wait until HAProxy's health checks see each replica as ``wanted`` says (``UP``, ``DOWN``)."""
    with anyio.fail_after(START):  # health checks every 300 ms; a busy machine answers them slowly
        while {name: state.split()[0] for name, state in (await server_states(stats)).items()} != wanted:  # noqa: ASYNC110
            await anyio.sleep(0.1)
