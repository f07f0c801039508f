"""Client instructions per call of whole clients, peers included, with calls in flight over HTTP.

``python -m bench.instructions [--clients mcpdeck,sdk-client,fastmcp] [--calls 300] [--inflight 32]``
``[--protocol modern|handshake|default] [--server http|sdk]``

Each client runs in the harness's own worker (``bench/worker.py``, in the client's venv: fastmcp's
in ``bench/.venvs/fastmcp``) under ``valgrind --tool=cachegrind``, twice: once connecting and making
the warm-up calls only, once with ``--calls`` calls more, ``--inflight`` at a time, exactly as the
``http-inflight`` metrics make them (the worker's ``inflight`` command). The difference of the two
totals over ``--calls`` is the client's user-space instructions per call (the server is another
process, not counted; a syscall counts as one instruction). Other load on the machine cannot move
these counts, unlike calls/s on a shared machine: it is the measure to steer by, the timed run
(``python -m bench --metrics http-inflight-modern``) the verdict. Counts at 32 in flight vary by
some tens of thousands between runs of the same code (``--repeat`` shows it).

The era (``--protocol``): ``modern`` pins 2026-07-28, ``handshake`` the ``initialize`` handshake,
``default`` leaves each client its own choice (``mcp.Client`` and fastmcp in ``auto`` reach a
server that speaks both with 2026-07-28; mcpdeck's ``auto`` opens with the handshake). Each
line names the era the client got. The server (``--server``): ``http``, the harness's near-free
server (``bench/servers/http.py``), or ``sdk``, the SDK's ``MCPServer`` (``bench/servers/sdk_small.py --http``).

``--profile DIR`` instead runs each client's worker (no valgrind) with ``--calls`` calls under
cProfile, and writes ``DIR/<client>.prof`` (CPU time).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Generator
from pathlib import Path

from bench.clients import client_info
from bench.clients.base import Protocol, ServerSpec
from bench.harness import ROOT, Worker
from bench.venvs import peer

__all__ = ["main"]

WARM_CALLS = 64
_SLOWED = {"PYTHONHASHSEED": "0", "BENCH_SLOWED": "1"}
"""The same dicts and sets in both runs; what mcpdeck's bench client changes in a slowed run (``SLOWED``)."""
TIMEOUT = 1800.0
"""Seconds a command may take under valgrind on a loaded machine."""


@contextlib.contextmanager
def _server(kind: str) -> Generator[str]:
    """The server's ``/mcp`` URL while it runs."""
    if kind == "sdk":
        command = [sys.executable, "-m", "bench.servers.sdk_small", "--http"]
    else:
        command = [sys.executable, "-S", "-m", "bench.servers.http"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE)
    assert process.stdout is not None
    try:
        line = process.stdout.readline().decode().strip()
        yield line if kind == "sdk" else f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(10)
        process.stdout.close()


def _python(name: str) -> str:
    info = client_info(name)
    if info.venv is None:
        return sys.executable
    venv = peer(info.venv)
    if not venv.status().get("ok"):
        sys.exit(f"bench.instructions: {name}'s venv is not ready: run bench/setup")
    return str(venv.python)


def _drive(worker: Worker, spec: ServerSpec, calls: int, inflight: int, profile: str = "") -> str:
    """Connect, warm up, make ``calls`` calls (under cProfile into ``profile``, if given); the era the client got."""
    ok = worker.request("hello", timeout=TIMEOUT)
    opened = ok.get("ok") and worker.request("open", timeout=TIMEOUT, key="k", servers=[spec.to_json()])
    if not opened or not opened.get("ok"):
        sys.exit(f"bench.instructions: {worker.info.name} did not connect: {(opened or ok).get('error')}")
    era = worker.request("era", timeout=TIMEOUT, key="k", server="s")
    for n, profiled in ((WARM_CALLS, ""), (calls, profile)):
        if n:
            done = worker.request(
                "inflight", timeout=TIMEOUT, key="k", server="s", tool="echo",
                args={"text": "hello"}, n=n, concurrency=inflight, profile=profiled,
            )  # fmt: skip
            if not done.get("ok"):
                sys.exit(f"bench.instructions: {worker.info.name}'s calls failed: {done.get('error')}")
    worker.request("quit", timeout=TIMEOUT)
    worker.process.wait(TIMEOUT)  # valgrind writes its count as the process ends
    return str(era.get("era")) if era.get("ok") else "?"


def _counted(
    name: str, spec: ServerSpec, calls: int, inflight: int, valgrind: str, env: dict[str, str]
) -> tuple[int, str]:
    """Total client instructions of one worker run, and the era it got."""
    with tempfile.TemporaryFile() as log:
        prefix = [valgrind, "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
        worker = Worker(client_info(name), _python(name), log, prefix=prefix, env=env)
        try:
            era = _drive(worker, spec, calls, inflight)
        finally:
            worker.kill()
        log.seek(0)
        text = log.read().decode(errors="replace")
    found = re.findall(r"I\s+refs:\s+([\d,]+)", text)
    if not found:
        sys.exit(f"bench.instructions: no count from valgrind for {name}:\n{text[-2000:]}")
    return int(found[-1].replace(",", "")), era


def _profiled(name: str, spec: ServerSpec, calls: int, inflight: int, out: Path, env: dict[str, str]) -> str:
    """One worker run with its calls under cProfile, written to ``out/<name>.prof``."""
    with tempfile.TemporaryFile() as log:
        worker = Worker(client_info(name), _python(name), log, env=env)
        try:
            return _drive(worker, spec, calls, inflight, profile=str(out.resolve() / f"{name}.prof"))
        finally:
            worker.kill()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.instructions",
        description="Client instructions per call of whole clients, with calls in flight over HTTP.",
    )
    parser.add_argument("--clients", default="mcpdeck,sdk-client,fastmcp")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--inflight", type=int, default=32)
    parser.add_argument("--protocol", choices=["modern", "handshake", "default"], default="modern")
    parser.add_argument("--server", choices=["http", "sdk"], default="http")
    parser.add_argument("--repeat", type=int, default=1, help="count each client this many times (rounds rotated)")
    parser.add_argument(
        "--hide", default="", help="modules the clients cannot import (e.g. sniffio: as in a venv without it)"
    )
    parser.add_argument("--profile", type=Path, metavar="DIR", help="cProfile each client's calls instead")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.clients.split(",") if n.strip()]
    protocol: Protocol = "" if args.protocol == "default" else args.protocol
    env = {**_SLOWED, "BENCH_HIDE": args.hide}
    with _server(args.server) as url:
        spec = ServerSpec(name="s", transport="http", url=url, protocol=protocol)
        if args.profile is not None:
            args.profile.mkdir(parents=True, exist_ok=True)
            for name in names:
                era = _profiled(name, spec, args.calls, args.inflight, args.profile, env)
                print(f"{name}: {args.profile / (name + '.prof')} ({era})", flush=True)
            return
        valgrind = shutil.which("valgrind")
        if valgrind is None:
            sys.exit("bench.instructions: needs valgrind on PATH")
        print(
            f"{args.server} server, {args.inflight} in flight, protocol {args.protocol}: client instructions per "
            f"call ({args.calls} calls apart, under valgrind, load {os.getloadavg()[0]:.1f})"
            + (f", {args.hide} hidden" if args.hide else ""),
            flush=True,
        )
        counts: dict[str, list[float]] = {name: [] for name in names}
        eras: dict[str, str] = {}
        for turn in range(args.repeat):
            for name in names[turn % len(names) :] + names[: turn % len(names)]:
                base, _ = _counted(name, spec, 0, args.inflight, valgrind, env)
                total, eras[name] = _counted(name, spec, args.calls, args.inflight, valgrind, env)
                counts[name].append((total - base) / args.calls)
                print(f"  {name:12} {counts[name][-1]:12,.0f}  ({eras[name]})", flush=True)
    print(f"{'client':12} {'median':>12} {'runs':>30}  era")
    for name in names:
        runs = ", ".join(f"{c / 1e6:.3f}M" for c in counts[name])
        print(f"{name:12} {statistics.median(counts[name]):12,.0f} {runs:>30}  {eras[name]}")


if __name__ == "__main__":
    main()
