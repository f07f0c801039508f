"""The harness: starts servers and one worker per client, drives them metric by metric.

The harness drives and the workers measure (``bench/worker.py``). Every client keeps its
own worker process for the whole run (memory gets a fresh one per sample), all workers
are up at once, and each metric runs in rounds that visit the clients in a rotated order,
so that drift of the machine (other load, thermal, caches) hits every client alike. Each
ratio is against the baseline measured in the same run.

Results are plain JSON (``Results``): the raw samples per client and metric, the machine,
and the versions; ``bench/report.py`` turns them into the tables.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import select
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Generator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from bench.clients import BASELINE, BASELINE_HTTP, CLIENTS, ClientInfo
from bench.clients.base import Protocol, ServerSpec
from bench.servers.line import BASE_TOOLS, tool_definitions
from bench.stats import median, ratio
from bench.tokens import CHARS_PER_TOKEN, counter, estimate
from bench.venvs import install_note, peer

__all__ = ["METRICS", "PROFILES", "Harness", "Profile", "machine_info"]

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
LINE_SERVER = BENCH / "servers" / "line.py"
SDK_SERVER = BENCH / "servers" / "sdk_small.py"
NODE = ROOT / "node_modules" / ".bin" / "node"
EVERYTHING = ROOT / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
SLACK = 20.0
"""Seconds the harness waits for a worker beyond the command's own time limit."""


@dataclass(frozen=True)
class Profile:
    """How much of everything to do."""

    name: str
    rounds: int = 50
    calls: int = 20
    """Sequential calls per client per round (``rounds * calls`` in all). Short rounds spread
    bursts of outside load evenly over the clients."""
    warmup: int = 100
    inflight_rounds: int = 10
    inflight_calls: int = 500
    concurrency: int = 32
    connect_servers: int = 10
    connect_filler: int = 20
    connect_rounds: int = 7
    catalog: int = 1000
    list_rounds: int = 5
    convert_repeats: int = 4
    """Conversions of the catalog per provider per ``list`` round (each a first time, then again)."""
    payload_bytes: int = 5_000_000
    payload_rounds: int = 3
    memory_servers: int = 10
    memory_rounds: int = 3
    everything_rounds: int = 5
    everything_calls: int = 40
    per_call_session_calls: int = 5
    """Calls per round for a client that opens a session (a server process) per call."""
    timeout: float = 120.0


PROFILES = {
    "full": Profile("full"),
    "quick": Profile(
        "quick",
        rounds=10,
        calls=20,
        warmup=20,
        inflight_rounds=3,
        inflight_calls=320,
        connect_rounds=2,
        catalog=1000,
        list_rounds=2,
        convert_repeats=3,
        payload_rounds=1,
        memory_rounds=1,
        everything_rounds=2,
        everything_calls=20,
        per_call_session_calls=2,
    ),
    "smoke": Profile(
        "smoke",
        rounds=2,
        calls=10,
        warmup=3,
        inflight_rounds=1,
        inflight_calls=64,
        connect_servers=3,
        connect_filler=5,
        connect_rounds=1,
        catalog=50,
        list_rounds=1,
        convert_repeats=1,
        payload_bytes=200_000,
        payload_rounds=1,
        memory_servers=2,
        memory_rounds=1,
        everything_rounds=1,
        everything_calls=3,
        per_call_session_calls=1,
        timeout=30.0,
    ),
}

METRICS: dict[str, str] = {
    "stdio-latency": "Sequential `echo` over stdio",
    "http-latency": "Sequential `echo` over streamable HTTP",
    "http-latency-modern": "Sequential `echo` over streamable HTTP, protocol 2026-07-28",
    "stdio-inflight": "Throughput, calls in flight on one stdio connection",
    "http-inflight": "Throughput, calls in flight on one HTTP connection",
    "http-inflight-modern": "Throughput, calls in flight on one HTTP connection, protocol 2026-07-28",
    "http-inflight-default": "Throughput, calls in flight on one HTTP connection, each client's own era",
    "connect-concurrent": "Connect stdio servers at once and list all their tools",
    "connect-sequential": "Connect stdio servers one after the other and list all their tools",
    "list": "Connect + list a big-catalog server (~1 KB per tool)",
    "payload-stdio": "A big result over stdio",
    "payload-http-sse": "A big result over HTTP, SSE response (one SSE event)",
    "payload-http-json": "A big result over HTTP, JSON response",
    "memory": "Client memory per connected stdio server, near-empty server (4 tools)",
    "memory-23": "Client memory per connected stdio server, 23 realistic tools (~1.1 KB of JSON each)",
    "memory-100": "Client memory per connected stdio server, 100 realistic tools (~1.1 KB of JSON each)",
    "memory-sdk": "Client memory per connected stdio server, a server of today's SDK (3 small tools, 2026-07-28)",
    "everything-latency": "Sequential `echo` on `@modelcontextprotocol/server-everything` (stdio, node)",
    "tokens": "Tokens of tool definitions per model request, all tools vs. tool search (mcpdeck's agent)",
}
"""Every metric, in run order. ``list`` also yields ``relist``, ``convert-first``, ``convert-again`` and
``list-convert`` (``DERIVED``)."""

DERIVED = {"list": ("relist", "convert-first", "convert-again", "list-convert")}

PROVIDERS = ("openai", "openai-responses", "anthropic", "gemini")
"""The tool formats the catalog is converted to (``mcpdeck.providers.get_provider`` names)."""

AGENT_CLIENT = "mcpdeck"
"""The client whose agent the ``tokens`` metric runs (the others have none)."""
ALL_TOOLS, FIRST_REQUEST, AFTER_SEARCH, SEARCH_RUN = (
    "all tools",
    "search: first request",
    "search: after one search",
    "search: 3-request run",
)
TOKEN_ROWS = (ALL_TOOLS, FIRST_REQUEST, AFTER_SEARCH, SEARCH_RUN)
"""The ``tokens`` rows of each provider (``<provider> / <row>``)."""
TOKEN_QUERIES = (
    "create a support ticket",
    "export billing invoices",
    "archive old deployments",
    "list security alerts",
    "sync customer orders",
)
"""What the model searches for in the ``tokens`` metric: tasks the server's filler tools do."""


@dataclass
class Row:
    """One client's samples for one metric.

    ``samples`` are seconds (latency kinds), calls per second (``rate``) or bytes
    (``bytes``); ``tail`` holds per-call seconds under load for a rate's p99 column.
    """

    client: str
    status: str = "ok"
    """``ok``, ``error``, ``n/a``, ``not installed`` or ``pending``."""
    note: str = ""
    samples: list[float] = field(default_factory=list[float])
    tail: list[float] = field(default_factory=list[float])
    cpu_s: float = 0.0
    units: int = 0
    """Calls (or operations) that ``cpu_s`` covers."""
    server_cpu_s: float | None = None
    extra: dict[str, Any] = field(default_factory=dict[str, Any])
    baseline_row: str | None = None
    """The row its ratio is against (None: the baseline client's row)."""

    def fail(self, status: str, note: str) -> None:
        if self.status == "ok":
            self.status, self.note = status, note


@dataclass
class Metric:
    id: str
    title: str
    kind: str
    """``latency`` (lower is better), ``rate`` (higher is better), ``bytes`` or ``tokens`` (lower is better)."""
    unit_note: str = ""
    rows: dict[str, Row] = field(default_factory=dict[str, Row])
    notes: list[str] = field(default_factory=list[str])


class WorkerError(Exception):
    """The worker died or stopped answering."""


class Worker:
    """One client's worker process, driven over JSON lines."""

    def __init__(
        self,
        info: ClientInfo,
        python: str,
        log: IO[bytes],
        *,
        prefix: tuple[str, ...] | list[str] = (),
        env: dict[str, str] | None = None,
    ):
        """``prefix``: a command the worker runs under (valgrind); ``env``: added to its environment."""
        self.info = info
        env = {**os.environ, "MCP_USE_ANONYMIZED_TELEMETRY": "false", "LANGSMITH_TRACING": "false", **(env or {})}
        env.pop("PYTHONPATH", None)
        self.process = subprocess.Popen(
            [*prefix, python, "-m", "bench.worker", info.name],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            env=env,
        )
        self._buffer = b""
        self.dead: str | None = None

    def request(self, op: str, timeout: float = 60.0, **fields: Any) -> dict[str, Any]:
        """Send one command; its answer (``{"ok": False, ...}`` when it failed)."""
        if self.dead:
            return {"ok": False, "kind": "error", "error": self.dead}
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            self.process.stdin.write(json.dumps({"op": op, "timeout": timeout, **fields}).encode() + b"\n")
            self.process.stdin.flush()
            deadline = time.monotonic() + timeout + SLACK
            fd = self.process.stdout.fileno()
            while b"\n" not in self._buffer:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise WorkerError(f"the worker did not answer {op!r} within {timeout + SLACK:g} s")
                readable, _, _ = select.select([fd], [], [], remaining)
                if readable:
                    chunk = os.read(fd, 1 << 20)
                    if not chunk:
                        raise WorkerError(f"the worker exited during {op!r} (code {self.process.wait()})")
                    self._buffer += chunk
        except (WorkerError, OSError) as error:
            self.dead = str(error)
            self.kill()
            return {"ok": False, "kind": "error", "error": self.dead}
        line, _, self._buffer = self._buffer.partition(b"\n")
        return json.loads(line)

    def quit(self) -> None:
        if not self.dead and self.process.poll() is None:
            self.request("quit", timeout=30)
        self.kill()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(5)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


def _print_progress(text: str) -> None:
    print(f"bench: {text}", file=sys.stderr, flush=True)


def _rotate(items: list[str], shift: int) -> list[str]:
    if not items:
        return items
    shift %= len(items)
    return items[shift:] + items[:shift]


def machine_info() -> dict[str, Any]:
    """The machine a run is on."""
    cpu = platform.processor() or "?"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    memory = "?"
    with contextlib.suppress(OSError, ValueError, IndexError):
        kib = int(Path("/proc/meminfo").read_text().split("\n", 1)[0].split()[1])
        memory = f"{kib / 1024 / 1024:.1f} GiB"
    node = "?"
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        node = subprocess.run([str(NODE), "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory": memory,
        "system": f"{platform.system()} {platform.release()}",
        "python": sys.version.split()[0],
        "node": node,
        "load_average": os.getloadavg(),
    }


class Harness:
    """Runs the chosen metrics for the chosen clients and gathers ``Results``."""

    def __init__(
        self,
        profile: Profile,
        clients: list[str],
        metrics: list[str],
        *,
        log_dir: Path,
        progress: Callable[[str], None] | None = None,
    ):
        self.profile = profile
        self.clients = [c for c in (info.name for info in CLIENTS) if c in clients]
        self.metrics = [m for m in METRICS if m in metrics]
        self.log_dir = log_dir
        self._progress = progress or _print_progress
        self._infos = {info.name: info for info in CLIENTS}
        self._workers: dict[str, Worker] = {}
        self._unusable: dict[str, tuple[str, str]] = {}
        self._versions: dict[str, dict[str, str]] = {}
        self._http_url = ""
        self._http_process: subprocess.Popen[bytes] | None = None
        self._logs: list[IO[bytes]] = []
        self.results: dict[str, Metric] = {}

    # ----- processes -------------------------------------------------------------------

    def _python(self, info: ClientInfo) -> str:
        if info.venv is None:
            return sys.executable
        return str(peer(info.venv).python)

    def _spawn(self, names: list[str], *, tag: str = "") -> dict[str, Worker]:
        """Start workers for these clients at once (imports overlap), then greet each.

        A client that cannot run gets its reason in ``_unusable`` and no worker.
        """
        started: dict[str, tuple[Worker, str]] = {}
        for name in names:
            info = self._infos[name]
            if info.venv is not None:
                status = peer(info.venv).status()
                if not status.get("ok"):
                    self._unusable[name] = ("not installed", str(status.get("error", "setup failed"))[:400])
                    continue
            log = (self.log_dir / f"worker-{name}{tag}.log").open("ab")
            self._logs.append(log)
            started[name] = (Worker(info, self._python(info), log), log.name)
        workers: dict[str, Worker] = {}
        for name, (worker, log_name) in started.items():
            hello = worker.request("hello", timeout=120)
            if not hello.get("ok"):
                worker.kill()
                self._unusable[name] = ("error", f"worker did not start: {hello.get('error')} (see {log_name})")
                continue
            self._versions[name] = hello["versions"]
            workers[name] = worker
        return workers

    def _start_http(self) -> None:
        log = (self.log_dir / "http-server.log").open("ab")
        self._logs.append(log)
        process = subprocess.Popen(
            [sys.executable, "-S", "-m", "bench.servers.http"], cwd=ROOT, stdout=subprocess.PIPE, stderr=log
        )
        assert process.stdout is not None
        line = process.stdout.readline().decode()
        if not line.startswith("PORT "):
            process.kill()
            raise RuntimeError(f"the HTTP server did not start (see {log.name})")
        self._http_process = process
        self._http_url = f"http://127.0.0.1:{int(line.split()[1])}"

    def _http_cpu(self) -> float | None:
        if not self._http_url:
            return None
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "bench/stats"}).encode()
        request = urllib.request.Request(
            f"{self._http_url}/mcp-json", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return float(json.loads(response.read())["result"]["cpu_s"])

    @contextlib.contextmanager
    def _running(self) -> Generator[None]:
        try:
            if any(m.startswith(("http", "payload-http")) for m in self.metrics):
                self._start_http()
            self._progress(f"starting workers: {', '.join(self.clients)}")
            self._workers = self._spawn(self.clients)
            yield
        finally:
            for worker in self._workers.values():
                worker.quit()
            if self._http_process is not None:
                self._http_process.terminate()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._http_process.wait(5)
                if self._http_process.stdout is not None:
                    self._http_process.stdout.close()
            for log in self._logs:
                log.close()

    # ----- servers ---------------------------------------------------------------------

    @staticmethod
    def line(name: str, filler: int = 0) -> ServerSpec:
        args = ("-S", str(LINE_SERVER), *(("--filler", str(filler)) if filler else ()))
        return ServerSpec(name=name, transport="stdio", command=sys.executable, args=args)

    @staticmethod
    def sdk_small(name: str, _filler: int = 0) -> ServerSpec:
        # -P: the script's folder (with its http.py) stays off sys.path.
        return ServerSpec(name=name, transport="stdio", command=sys.executable, args=("-P", str(SDK_SERVER)))

    def http(self, name: str, *, json_response: bool = False, modern: bool = False, own: bool = False) -> ServerSpec:
        """The HTTP server, spoken to in the handshake era (``initialize``) or, ``modern``, in 2026-07-28: it
        accepts both, as SDK servers do, so each client is pinned to one (``ServerSpec.protocol``); ``own``:
        in the era each client chooses by default."""
        url = f"{self._http_url}/mcp{'-json' if json_response else ''}"
        protocol: Protocol = "" if own else "modern" if modern else "handshake"
        return ServerSpec(name=name, transport="http", url=url, protocol=protocol)

    @staticmethod
    def everything(name: str) -> ServerSpec:
        return ServerSpec(name=name, transport="stdio", command=str(NODE), args=(str(EVERYTHING), "stdio"))

    # ----- running ---------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        """Run everything chosen; the results as JSON data."""
        started = time.time()
        machine = machine_info()
        with self._running():
            for metric in self.metrics:
                self._progress(f"{metric}: {METRICS[metric]}")
                getattr(self, f"_m_{metric.replace('-', '_')}")(metric)
        machine["load_average_end"] = os.getloadavg()
        return {
            "format": 1,
            "profile": asdict(self.profile),
            "started": time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(started)),
            "seconds": round(time.time() - started, 1),
            "machine": machine,
            "baseline": BASELINE,
            "baseline_http": BASELINE_HTTP,
            "clients": {
                name: {
                    "label": self._infos[name].label,
                    "versions": self._versions.get(name, {}),
                    "status": self._unusable.get(name, ("ok", ""))[0],
                    "note": self._unusable.get(name, ("ok", ""))[1],
                    "install": self._install_note(name),
                }
                for name in self.clients
            },
            "metrics": {mid: asdict(metric) for mid, metric in self.results.items()},
        }

    def _install_note(self, name: str) -> str:
        venv = self._infos[name].venv
        return "main .venv" if venv is None else f"bench/.venvs/{venv}: {install_note(peer(venv).status())}"

    def _metric(self, mid: str, kind: str, unit_note: str = "", title: str | None = None) -> Metric:
        metric = self.results[mid] = Metric(id=mid, title=title or METRICS[mid], kind=kind, unit_note=unit_note)
        for name in self.clients:
            row = metric.rows[name] = Row(name)
            if name in self._unusable:
                row.fail(*self._unusable[name])
        return metric

    def _ready(
        self, metric: Metric, *, stdio_only: bool = False, sequential_only: bool = False, handshake: bool = False
    ) -> list[str]:
        """Clients that can run this metric (the others' rows say why not)."""
        ready: list[str] = []
        for name in self.clients:
            row = metric.rows[name]
            if row.status != "ok":
                continue
            worker = self._workers.get(name)
            if worker is None or worker.dead:
                row.fail("error", worker.dead if worker and worker.dead else "no worker")
            elif stdio_only and name.startswith("floor"):
                row.fail("n/a", "the floor is stdio only")
            elif handshake and name.startswith("floor"):
                row.fail("n/a", "the floor skips the MCP handshake, which this server requires")
            elif sequential_only and name == "floor-blocking":
                row.fail("n/a", "blocking I/O has one call in flight at most")
            else:
                ready.append(name)
        return ready

    def _budget(self, name: str, calls: int) -> int:
        return min(calls, self.profile.per_call_session_calls) if self._infos[name].session_per_call else calls

    def _open(self, metric: Metric, name: str, key: str, servers: list[ServerSpec], concurrent: bool = True) -> bool:
        reply = self._workers[name].request(
            "open",
            timeout=self.profile.timeout,
            key=key,
            servers=[s.to_json() for s in servers],
            concurrent=concurrent,
        )
        if not reply["ok"]:
            metric.rows[name].fail("error" if reply["kind"] != "unsupported" else "n/a", f"connect: {reply['error']}")
            return False
        metric.rows[name].extra.setdefault("connect_s", []).append(reply["wall_s"])
        return True

    def _close(self, name: str, key: str) -> dict[str, Any]:
        return self._workers[name].request("close", timeout=self.profile.timeout, key=key)

    # ----- sequential calls --------------------------------------------------------------

    def _sequential(
        self,
        mid: str,
        server: Callable[[], ServerSpec],
        tool: str,
        args: dict[str, Any],
        *,
        rounds: int,
        calls: int,
        warmup: int,
        expected: int,
        handshake: bool = False,
    ) -> None:
        metric = self._metric(mid, "latency", "per call")
        http = server().transport == "http"
        ready: list[str] = []
        for name in self._ready(metric, stdio_only=http, handshake=handshake):
            if self._open(metric, name, mid, [server()]):
                warm = self._workers[name].request(
                    "calls", timeout=self.profile.timeout, key=mid, server="s", tool=tool, args=args,
                    n=self._budget(name, warmup),
                )  # fmt: skip
                if warm["ok"]:
                    ready.append(name)
                else:
                    metric.rows[name].fail("error", warm["error"])
        for turn in range(rounds):
            self._progress(f"{mid}: round {turn + 1}/{rounds}")
            for name in _rotate(ready, turn):
                row = metric.rows[name]
                if row.status != "ok":
                    continue
                n = self._budget(name, calls)
                before = self._http_cpu() if http else None
                reply = self._workers[name].request(
                    "calls", timeout=self.profile.timeout + n, key=mid, server="s", tool=tool, args=args, n=n
                )
                after = self._http_cpu() if http else None
                if not reply["ok"]:
                    row.fail("error", reply["error"])
                    continue
                row.samples += [d / 1e9 for d in reply["durations_ns"]]
                row.cpu_s += reply["cpu_s"]
                row.units += n
                server_cpu = reply.get("server_cpu_s")
                if before is not None and after is not None:
                    server_cpu = after - before
                if server_cpu is not None:
                    row.server_cpu_s = (row.server_cpu_s or 0.0) + server_cpu
                if reply["size"] != expected:
                    row.note = f"returned {reply['size']} characters, expected {expected}"
        for name in ready:
            self._close(name, mid)

    def _m_stdio_latency(self, mid: str) -> None:
        p = self.profile
        self._sequential(
            mid, lambda: self.line("s"), "echo", {"text": "hello"},
            rounds=p.rounds, calls=p.calls, warmup=p.warmup, expected=5,
        )  # fmt: skip

    def _m_http_latency(self, mid: str) -> None:
        p = self.profile
        self._sequential(
            mid, lambda: self.http("s"), "echo", {"text": "hello"},
            rounds=p.rounds, calls=p.calls, warmup=p.warmup, expected=5,
        )  # fmt: skip

    def _m_http_latency_modern(self, mid: str) -> None:
        p = self.profile
        self._sequential(
            mid, lambda: self.http("s", modern=True), "echo", {"text": "hello"},
            rounds=p.rounds, calls=p.calls, warmup=p.warmup, expected=5,
        )  # fmt: skip

    def _m_everything_latency(self, mid: str) -> None:
        p = self.profile
        self._sequential(
            mid, lambda: self.everything("s"), "echo", {"message": "hello"},
            rounds=p.everything_rounds, calls=p.everything_calls, warmup=min(p.warmup, 20), expected=len("Echo: hello"),
            handshake=True,
        )  # fmt: skip

    # ----- calls in flight --------------------------------------------------------------

    def _inflight(self, mid: str, server: Callable[[], ServerSpec]) -> None:
        p = self.profile
        metric = self._metric(mid, "rate", f"{p.concurrency} calls in flight")
        http = server().transport == "http"
        ready = [
            n
            for n in self._ready(metric, stdio_only=http, sequential_only=True)
            if self._open(metric, n, mid, [server()])
        ]
        if http:
            eras = [f"{n} {self._workers[n].request('era', key=mid, server='s').get('era', '?')}" for n in ready]
            metric.notes.append(f"The protocol version each client got: {', '.join(eras)}.")
        for turn in range(p.inflight_rounds):
            self._progress(f"{mid}: round {turn + 1}/{p.inflight_rounds}")
            for name in _rotate(ready, turn):
                row = metric.rows[name]
                info = self._infos[name]
                if row.status != "ok" or (info.session_per_call and turn > 0):
                    continue
                n = 2 * p.concurrency if info.session_per_call else p.inflight_calls
                reply = self._workers[name].request(
                    "inflight", timeout=p.timeout + n / 10, key=mid, server="s", tool="echo",
                    args={"text": "hello"}, n=n, concurrency=p.concurrency,
                )  # fmt: skip
                if not reply["ok"]:
                    row.fail("error", reply["error"])
                    continue
                row.samples.append(n / reply["wall_s"])
                row.tail += [d / 1e9 for d in reply["durations_ns"]]
                row.cpu_s += reply["cpu_s"]
                row.units += n
        for name in ready:
            self._close(name, mid)

    def _m_stdio_inflight(self, mid: str) -> None:
        self._inflight(mid, lambda: self.line("s"))

    def _m_http_inflight(self, mid: str) -> None:
        self._inflight(mid, lambda: self.http("s"))

    def _m_http_inflight_modern(self, mid: str) -> None:
        self._inflight(mid, lambda: self.http("s", modern=True))

    def _m_http_inflight_default(self, mid: str) -> None:
        self._inflight(mid, lambda: self.http("s", own=True))

    # ----- connecting ---------------------------------------------------------------------

    def _connect(self, mid: str, *, concurrent: bool) -> None:
        p = self.profile
        metric = self._metric(mid, "latency", f"{p.connect_servers} servers x {4 + p.connect_filler} tools")
        servers = [self.line(f"s{i}", p.connect_filler) for i in range(p.connect_servers)]
        expected = p.connect_servers * (4 + p.connect_filler)
        ready = self._ready(metric, sequential_only=concurrent)
        for turn in range(p.connect_rounds):
            self._progress(f"{mid}: round {turn + 1}/{p.connect_rounds}")
            for name in _rotate(ready, turn):
                row = metric.rows[name]
                if row.status != "ok":
                    continue
                reply = self._workers[name].request(
                    "open", timeout=p.timeout, key=mid, servers=[s.to_json() for s in servers], concurrent=concurrent
                )
                if not reply["ok"]:
                    row.fail("error", reply["error"])
                    continue
                closed = self._close(name, mid)
                row.samples.append(reply["wall_s"])
                row.cpu_s += reply["cpu_s"]
                row.units += 1
                row.extra.setdefault("close_s", []).append(closed.get("wall_s"))
                if reply["tools"] is not None and reply["tools"] != expected:
                    row.note = f"listed {reply['tools']} tools, expected {expected}"

    def _m_connect_concurrent(self, mid: str) -> None:
        self._connect(mid, concurrent=True)

    def _m_connect_sequential(self, mid: str) -> None:
        self._connect(mid, concurrent=False)

    # ----- a big catalog ------------------------------------------------------------------

    def _m_list(self, mid: str) -> None:
        p = self.profile
        tools = p.catalog + 4
        metric = self._metric(mid, "latency", f"{tools} tools", title=f"Connect + list a {p.catalog}-tool server")
        relist = self._metric("relist", "latency", f"{tools} tools", title=f"List the {p.catalog}-tool server again")
        relist.notes.append(
            "mcpdeck lists when a server says its tools changed: its time is a `touch_tools` call, the "
            "`tools/list_changed` notification, the list and the new catalog (`ToolsChanged` event)."
        )
        first, again, both = self._conversion_metrics(tools)
        ready = self._ready(metric)
        for name in self.clients:
            if metric.rows[name].status != "ok":
                relist.rows[name].fail(metric.rows[name].status, metric.rows[name].note)
        no_conversion: dict[str, tuple[str, str]] = {}
        for turn in range(p.list_rounds):
            self._progress(f"{mid}: round {turn + 1}/{p.list_rounds}")
            for name in _rotate(ready, turn):
                row = metric.rows[name]
                if row.status != "ok":
                    continue
                worker = self._workers[name]
                reply = worker.request(
                    "open", timeout=p.timeout, key=mid, servers=[self.line("s", p.catalog).to_json()], concurrent=True
                )
                if not reply["ok"]:
                    row.fail("error", reply["error"])
                    relist.rows[name].fail("error", "connect failed")
                    no_conversion[name] = ("error", "connect failed")
                    continue
                row.samples.append(reply["wall_s"])
                row.cpu_s += reply["cpu_s"]
                row.units += 1
                if reply["tools"] is not None and reply["tools"] != tools:
                    row.note = f"listed {reply['tools']} tools, expected {tools}"
                self._timed(relist.rows[name], worker.request("relist", timeout=p.timeout, key=mid, server="s"))
                if name not in no_conversion:
                    refused = self._convert_all(worker, name, mid, reply, (first, again, both))
                    if refused is not None:
                        no_conversion[name] = ("n/a", refused)  # no conversion at all: one row says so
                self._close(name, mid)
        self._finish_conversions(metric, (first, again, both), no_conversion)

    def _convert_all(
        self, worker: Worker, name: str, key: str, listing: dict[str, Any], tables: tuple[Metric, Metric, Metric]
    ) -> str | None:
        """One round's conversions by one client: each provider, first time then again, ``convert_repeats`` times.

        Returns why not when the client has no conversion at all.
        """
        p = self.profile
        first, again, both = tables
        expected = p.catalog + 4
        for provider in PROVIDERS:
            for repeat in range(p.convert_repeats):
                answers = [
                    worker.request("convert", timeout=p.timeout, key=key, server="s", provider=provider, again=a)
                    for a in (False, True)
                ]
                if provider == PROVIDERS[0] and not answers[0]["ok"] and answers[0]["kind"] == "unsupported":
                    return str(answers[0]["error"])
                for table, answer in zip((first, again), answers, strict=True):
                    self._timed(self._conversion_row(table, name, provider), answer, expected=expected)
                if repeat == 0:  # the conversion that follows the listing
                    row = self._conversion_row(both, name, provider, own_baseline=False)
                    self._timed(row, answers[0], expected=expected, before=listing)
        return None

    def _conversion_metrics(self, tools: int) -> tuple[Metric, Metric, Metric]:
        """The three tables of the catalog's conversion; their rows are made as answers come."""
        catalog = self.profile.catalog
        unit = f"{tools} tools, {len(PROVIDERS)} providers"
        first = self._metric("convert-first", "latency", unit, title=f"Convert the {catalog}-tool catalog (first time)")
        again = self._metric(
            "convert-again", "latency", unit, title=f"Convert the unchanged {catalog}-tool catalog again"
        )
        both = self._metric(
            "list-convert", "latency", unit, title=f"Connect + list a {catalog}-tool server, then convert its catalog"
        )
        first.notes.append(
            "One row per client and provider: the whole catalog in the provider's tool format. mcpdeck: "
            "`get_provider(p).tools(host.catalog)` with a new converter (nothing cached); the SDK rows are a naive "
            "hand conversion (no schema fix-ups, no cache); langchain's is `convert_to_openai_tool` (OpenAI only). "
            f"x {BASELINE}: against the SDK's naive conversion to the same provider."
        )
        again.notes.append(
            "Right after the first conversion, the same catalog again: mcpdeck asks the same converter, which "
            "answers from its per-catalog-version cache; the others convert again. "
            f"x {BASELINE}: against the SDK's naive conversion to the same provider."
        )
        both.notes.append(
            f"Per round: the connect + list time of the `list` table plus the first conversion of that round. "
            f"The `{BASELINE}` row is the bare SDK's connect + list alone (no conversion), the reference of the "
            "target (list + convert ≤ 1.0x the bare SDK's listing)."
        )
        for convert in (first, again, both):
            convert.rows.clear()
        return first, again, both

    @staticmethod
    def _conversion_row(metric: Metric, name: str, provider: str, *, own_baseline: bool = True) -> Row:
        key = f"{name} / {provider}"
        row = metric.rows.get(key)
        if row is None:
            row = metric.rows[key] = Row(key, baseline_row=f"{BASELINE} / {provider}" if own_baseline else None)
        return row

    def _finish_conversions(
        self, listed: Metric, conversions: tuple[Metric, ...], no_conversion: dict[str, tuple[str, str]]
    ) -> None:
        """Rows for the clients that converted nothing, the baseline's listing, and a stable order."""
        order = {name: i for i, name in enumerate(self.clients)}
        both = conversions[-1]
        base = listed.rows[BASELINE]
        both.rows[BASELINE] = Row(
            BASELINE, status=base.status, note=base.note or "connect + list only (the reference)",
            samples=list(base.samples), cpu_s=base.cpu_s, units=base.units,
        )  # fmt: skip
        for name in self.clients:
            row = listed.rows[name]
            failed = no_conversion.get(name) or ((row.status, row.note) if row.status != "ok" else None)
            for convert in conversions:
                if failed is not None and not any(key.startswith(f"{name} / ") for key in convert.rows):
                    convert.rows[name] = Row(name, status=failed[0], note=failed[1])

        def rank(key: str) -> tuple[int, int]:
            client, _, provider = key.partition(" / ")
            return order.get(client, len(order)), PROVIDERS.index(provider) if provider in PROVIDERS else -1

        for convert in conversions:
            convert.rows = {key: convert.rows[key] for key in sorted(convert.rows, key=rank)}

    @staticmethod
    def _timed(
        row: Row, reply: dict[str, Any], expected: int | None = None, before: dict[str, Any] | None = None
    ) -> None:
        """Add one timed operation's sample (``before``: an operation it follows, whose time it adds)."""
        if row.status != "ok":
            return
        if not reply["ok"]:
            row.fail("n/a" if reply["kind"] == "unsupported" else "error", reply["error"])
            return
        row.samples.append(reply["wall_s"] + (before["wall_s"] if before else 0.0))
        row.cpu_s += reply["cpu_s"] + (before["cpu_s"] if before else 0.0)
        row.units += 1
        if expected is not None and reply.get("tools") is not None and reply["tools"] != expected:
            row.note = f"{reply['tools']} tools, expected {expected}"

    # ----- big results ----------------------------------------------------------------------

    def _payload(self, mid: str, server: Callable[[], ServerSpec]) -> None:
        p = self.profile
        metric = self._metric(mid, "latency", f"{p.payload_bytes / 1e6:g} MB text")
        http = server().transport == "http"
        ready = self._ready(metric, stdio_only=http)
        for turn in range(p.payload_rounds):
            self._progress(f"{mid}: round {turn + 1}/{p.payload_rounds}")
            for name in _rotate(ready, turn):
                row = metric.rows[name]
                if row.status != "ok" or not self._open(metric, name, mid, [server()]):
                    continue
                reply = self._workers[name].request(
                    "calls", timeout=p.timeout, key=mid, server="s", tool="payload",
                    args={"bytes": p.payload_bytes}, n=1,
                )  # fmt: skip
                if reply["ok"]:
                    row.samples += [d / 1e9 for d in reply["durations_ns"]]
                    row.cpu_s += reply["cpu_s"]
                    row.units += 1
                    if reply["size"] != p.payload_bytes:
                        row.note = f"got {reply['size']} characters of {p.payload_bytes}"
                else:
                    row.fail("error", reply["error"])
                self._close(name, mid)

    def _m_payload_stdio(self, mid: str) -> None:
        self._payload(mid, lambda: self.line("s"))

    def _m_payload_http_sse(self, mid: str) -> None:
        self._payload(mid, lambda: self.http("s"))

    def _m_payload_http_json(self, mid: str) -> None:
        self._payload(mid, lambda: self.http("s", json_response=True))

    # ----- memory ------------------------------------------------------------------------------

    def _m_memory(self, mid: str) -> None:
        self._memory(mid, tools=len(BASE_TOOLS))

    def _m_memory_23(self, mid: str) -> None:
        self._memory(mid, tools=23)

    def _m_memory_100(self, mid: str) -> None:
        self._memory(mid, tools=100)

    def _m_memory_sdk(self, mid: str) -> None:
        self._memory(mid, tools=0)

    def _memory(self, mid: str, tools: int) -> None:
        """RSS growth per connected server whose tool list has ``tools`` tools (the base ones, then
        filler); 0: the server of today's SDK (``bench/servers/sdk_small.py``)."""
        p = self.profile
        filler = max(0, tools - len(BASE_TOOLS))
        json_bytes = sum(len(json.dumps(t, separators=(",", ":"))) for t in tool_definitions(filler))
        metric = self._metric(mid, "bytes", f"RSS delta / {p.memory_servers} servers")
        served = (
            f"Each server lists {tools} tools, {json_bytes / 1024:.1f} KiB of tool JSON (compact)."
            if tools
            else "Each server is `bench/servers/sdk_small.py`, on the SDK's own `MCPServer`: 3 small tools, "
            "and the 2026-07-28 protocol for the clients that speak it (a bare `ClientSession` speaks the "
            "`initialize` handshake; mcpdeck then keeps a `subscriptions/listen` stream open for list changes)."
        )
        metric.notes.append(
            "RSS of the client process after a full GC: one server connected first (imports and first-use "
            f"costs), then {p.memory_servers} more; the row is the growth divided by {p.memory_servers}. " + served
        )
        if filler == 0 and tools:
            metric.notes.append(
                "A near-empty server: what it shows is the cost of a connection, not of what it carries; "
                "`memory-23` and `memory-100` show the cost that grows with the tools users connect."
            )
        ready: list[str] = []
        for name in self._ready(metric):
            if self._infos[name].session_per_call:
                metric.rows[name].fail("n/a", "holds no connection between calls")
            elif not tools and self._infos[name].module == "floor":
                metric.rows[name].fail("n/a", "speaks no MCP: only the line server answers it")
            else:
                ready.append(name)
        server = self.line if tools else self.sdk_small
        extra = [server(f"m{i}", filler) for i in range(p.memory_servers)]
        for turn in range(p.memory_rounds):
            self._progress(f"{mid}: round {turn + 1}/{p.memory_rounds}")
            order = _rotate(ready, turn)
            fresh = self._spawn([name for name in order if metric.rows[name].status == "ok"], tag="-memory")
            for name in order:
                row = metric.rows[name]
                worker = fresh.get(name)
                if worker is None:
                    if row.status == "ok":
                        row.fail(*self._unusable.pop(name, ("error", "no worker")))
                    continue
                try:
                    warm = [server("w", filler).to_json()]
                    more = [s.to_json() for s in extra]
                    steps = [
                        worker.request("open", timeout=p.timeout, key="warm", servers=warm, concurrent=True),
                        before := worker.request("rss"),
                        worker.request("open", timeout=p.timeout, key="mem", servers=more, concurrent=True),
                        after := worker.request("rss"),
                    ]
                    failed = next((s for s in steps if not s["ok"]), None)
                    if failed is not None:
                        row.fail("error", failed["error"])
                        continue
                    row.samples.append((after["rss"] - before["rss"]) / p.memory_servers)
                    row.extra.setdefault("rss_one_server", []).append(before["rss"])
                    row.extra["tool_json_bytes"] = json_bytes
                finally:
                    worker.quit()

    # ----- tokens -------------------------------------------------------------------------------

    def _m_tokens(self, mid: str) -> None:
        p = self.profile
        tokens = counter()
        unit = "o200k_base tokens" if tokens.exact else f"estimated tokens (characters / {CHARS_PER_TOKEN})"
        metric = self._metric(mid, "tokens", unit, title=f"Tool definitions per model request, {p.catalog}-tool server")
        ready = AGENT_CLIENT in self._ready(metric)
        metric.rows.clear()
        queries = ", ".join(f"“{q}”" for q in TOKEN_QUERIES)
        metric.notes += [
            f"The `tools` value of each model request of mcpdeck's `Agent` over a {p.catalog}-tool server "
            f"({p.catalog} filler tools of about 1.15 KB and 4 small ones, plus the agent's native tools "
            "`list_mcp_resources` and `read_mcp_resource`), as compact JSON, recorded by a stand-in model (no "
            "network) from what the agent loop passes with each request. **all tools**: tool search off, every tool "
            "in one request. **search: first request**: tool search as by default (on above 40 tools): the native "
            "tools and `search_tools` only. **search: after one search**: the model called `search_tools` (its "
            "default limit, 5) with a realistic query, and the tools it found (the real `ToolIndex`) joined; "
            f"queries: {queries}. **search: 3-request run**: the mean per request of the run first request → "
            "search → call the first tool found → answer (one first request, two after the search). "
            "**of all tools**: against the same provider's all-tools request (medians over the queries).",
            f"Tokens: {tokens.label}. Every provider's request is counted with it (no tokenizer of Anthropic's "
            "or Google's current models is to be had offline), and no provider bills the JSON text as such (each "
            "renders the definitions into its own prompt format), so the counts are a proxy for the definitions' "
            "size. The ratios, which the target is about, hardly depend on the tokenizer: see the characters / 4 "
            "column.",
        ]
        if not ready:
            reason = "not in this run" if AGENT_CLIENT not in self.clients else "its worker is not ready"
            metric.rows[AGENT_CLIENT] = Row(AGENT_CLIENT, status="n/a", note=f"mcpdeck {reason}: it has the agent")
            return
        worker = self._workers[AGENT_CLIENT]
        server = self.line("s", p.catalog)
        opened = worker.request("open", timeout=p.timeout, key=mid, servers=[server.to_json()], concurrent=True)
        try:
            for provider in PROVIDERS:
                self._progress(f"{mid}: {provider}")
                base = f"{provider} / {ALL_TOOLS}"
                rows = {what: Row(f"{provider} / {what}", baseline_row=base) for what in TOKEN_ROWS}
                metric.rows.update({row.client: row for row in rows.values()})
                reply = opened if not opened["ok"] else worker.request(
                    "agent_requests", timeout=p.timeout, key=mid, server="s", provider=provider,
                    queries=list(TOKEN_QUERIES),
                )  # fmt: skip
                if not reply["ok"]:
                    for row in rows.values():
                        row.fail("n/a" if reply["kind"] == "unsupported" else "error", str(reply["error"]))
                    continue
                self._token_rows(rows, reply, tokens.count)
        finally:
            if opened["ok"]:
                self._close(AGENT_CLIENT, mid)
        if tokens.exact:
            metric.notes.append(self._tokenizer_note(metric))

    @staticmethod
    def _tokenizer_note(metric: Metric) -> str:
        """How much the after-search ratio moves when tokens are estimated as characters / 4 instead."""
        by_tokens: list[float] = []
        by_estimate: list[float] = []
        for provider in PROVIDERS:
            after, every = metric.rows.get(f"{provider} / {AFTER_SEARCH}"), metric.rows.get(f"{provider} / {ALL_TOOLS}")
            if after is None or every is None or after.status != "ok" or every.status != "ok":
                continue
            exact = ratio(median(after.samples), median(every.samples))
            rough = ratio(median(after.extra.get("estimate", [])), median(every.extra.get("estimate", [])))
            if exact is not None and rough is not None:
                by_tokens.append(exact)
                by_estimate.append(rough)
        if not by_tokens:
            return "The ratio by characters / 4: not measured."

        def span(values: list[float]) -> str:
            low, high = min(values), max(values)
            return f"{low:.2%}" if f"{low:.2%}" == f"{high:.2%}" else f"{low:.2%} to {high:.2%}"

        return (
            f"After one search, across the {len(by_tokens)} providers, the request is {span(by_tokens)} of the "
            f"all-tools request in o200k_base tokens, and {span(by_estimate)} by characters / 4."
        )

    @staticmethod
    def _token_rows(rows: dict[str, Row], reply: dict[str, Any], count: Callable[[str], int]) -> None:
        """Fill one provider's rows from the agent's requests (``Connection.agent_requests``)."""

        def add(row: Row, *requests: dict[str, Any]) -> None:
            texts = [str(r["json"]) for r in requests]
            row.samples.append(sum(count(t) for t in texts) / len(texts))
            row.extra.setdefault("bytes", []).append(sum(len(t.encode()) for t in texts) / len(texts))
            row.extra.setdefault("estimate", []).append(sum(estimate(t) for t in texts) / len(texts))
            row.extra.setdefault("tools", []).append(sum(int(r["tools"]) for r in requests) / len(requests))
            row.units = round(row.extra["tools"][0])

        add(rows[ALL_TOOLS], reply["all"])
        for run in reply["runs"]:
            requests: list[dict[str, Any]] = run["requests"]
            if len(requests) != 3 or not run["found"]:
                note = f"{run['query']!r}: {len(requests)} requests, found {len(run['found'])} tools"
                for what in TOKEN_ROWS[1:]:
                    rows[what].fail("error", note)
                continue
            add(rows[FIRST_REQUEST], requests[0])
            add(rows[AFTER_SEARCH], requests[1])
            add(rows[SEARCH_RUN], *requests)
            rows[AFTER_SEARCH].extra.setdefault("found", []).append(run["found"])
        if not reply["searching"]:
            for what in TOKEN_ROWS[1:]:
                rows[what].note = "the agent does not search with this few tools: every request has them all"
