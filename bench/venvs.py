"""The peer libraries' virtual environments: ``bench/.venvs/<name>``, one per library.

``python -m bench.venvs`` (what ``bench/setup`` runs) creates each environment and installs
its library, trying the requirements listed for it in order, and writes what happened to
``bench/.venvs/<name>/bench-status.json``: the requirement that installed (or every error),
and the versions of the packages that matter. The harness reads that file: a peer that could
not be installed is reported as such, with the reason. Run it again to retry; ``--force``
rebuilds environments that are already fine.

Standard library only.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["PEERS", "VENVS", "PeerVenv", "install_note", "peer", "setup_all"]

BENCH = Path(__file__).resolve().parent
VENVS = BENCH / ".venvs"


@dataclass(frozen=True)
class PeerVenv:
    """One peer library's environment.

    Attributes:
        name: The folder under ``bench/.venvs``.
        requirements: pip requirement sets to try in order (each a space-separated list).
        packages: Distributions whose versions the status records.
        note: Why the requirements are what they are.
    """

    name: str
    requirements: tuple[str, ...]
    packages: tuple[str, ...]
    note: str = ""

    @property
    def path(self) -> Path:
        return VENVS / self.name

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    @property
    def status_file(self) -> Path:
        return self.path / "bench-status.json"

    def status(self) -> dict[str, Any]:
        """What setup recorded (``{"ok": False, ...}`` when it never ran)."""
        try:
            data: dict[str, Any] = json.loads(self.status_file.read_text())
        except (OSError, ValueError):
            return {"ok": False, "error": f"not set up: run bench/setup (no {self.status_file.relative_to(BENCH)})"}
        if data.get("ok") and not self.python.exists():
            return {**data, "ok": False, "error": f"{self.python} is missing: run bench/setup again"}
        return data


PEERS: tuple[PeerVenv, ...] = (
    PeerVenv(
        "fastmcp",
        ("fastmcp==4.1.6", "fastmcp-slim[client]==4.1.6"),
        ("fastmcp", "fastmcp-slim", "mcp"),
        note="fastmcp 4.1.6 needs certifi>=2026.10.19 for its server extra, which this machine's index may lack; "
        "fastmcp-slim[client] is the same project's client without the server extra",
    ),
    PeerVenv("langchain", ("langchain-mcp-adapters==0.3.2",), ("langchain-mcp-adapters", "langchain-core", "mcp")),
    PeerVenv("mcp-use", ("mcp-use==1.7.1",), ("mcp-use", "mcp")),
    PeerVenv(
        "mcp-proxy",
        ("mcp-proxy==0.13.0",),
        ("mcp-proxy", "mcp"),
        note="a gateway peer for bench.gateway (one stdio server served over HTTP); pins mcp<2",
    ),
    PeerVenv(
        "contextforge",
        ("mcp-contextforge-gateway==1.0.7.post20260921",),
        ("mcp-contextforge-gateway", "mcp", "uvicorn", "starlette"),
        note="IBM ContextForge, a gateway peer for bench.gateway: its mcpgateway.translate bridge fronts a stdio "
        "server over streamable HTTP (the full gateway needs a server over HTTP or SSE behind it)",
    ),
)


def install_note(status: dict[str, Any]) -> str:
    """What setup installed, and which requirements it could not, in one line."""
    failed = [t for t in status.get("tried", []) if not t.get("ok")]
    reasons = "; ".join(
        f"`{t['requirement']}` did not install: {str(t.get('error', '?')).splitlines()[-1][:160]}" for t in failed
    )
    if status.get("ok"):
        return f"installed `{status.get('installed')}`" + (f" ({reasons})" if reasons else "")
    return reasons or str(status.get("error", "not set up"))


def peer(name: str) -> PeerVenv:
    for venv in PEERS:
        if venv.name == name:
            return venv
    raise KeyError(f"no peer environment named {name!r}")


def _versions(venv: PeerVenv) -> dict[str, str]:
    code = (
        "import json, sys\nfrom importlib import metadata\nout = {'python': sys.version.split()[0]}\n"
        "for name in sys.argv[1:]:\n"
        "    try: out[name] = metadata.version(name)\n"
        "    except metadata.PackageNotFoundError: pass\n"
        "print(json.dumps(out))"
    )
    done = subprocess.run([str(venv.python), "-c", code, *venv.packages], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def _tail(text: str, lines: int = 6) -> str:
    kept = [line for line in text.splitlines() if line.strip() and not line.startswith("WARNING: Location")]
    return "\n".join(kept[-lines:])


def setup_one(venv: PeerVenv, *, force: bool = False, python: str | None = None) -> dict[str, Any]:
    """Create (or keep) one environment and record its status."""
    current = venv.status()
    if current.get("ok") and current.get("requirements") == list(venv.requirements) and not force:
        print(f"bench setup: {venv.name}: ready ({current.get('installed')})", file=sys.stderr)
        return current
    if venv.path.exists():
        shutil.rmtree(venv.path)
    base = python or getattr(sys, "_base_executable", sys.executable)
    print(f"bench setup: {venv.name}: creating {venv.path.relative_to(BENCH.parent)}", file=sys.stderr)
    subprocess.run([base, "-m", "venv", str(venv.path)], check=True)
    tried: list[dict[str, Any]] = []
    status: dict[str, Any] = {"ok": False}
    log = venv.path / "install.log"
    for requirement in venv.requirements:
        print(f"bench setup: {venv.name}: pip install {requirement}", file=sys.stderr)
        started = time.monotonic()
        done = subprocess.run(
            [str(venv.python), "-m", "pip", "install", "--disable-pip-version-check", *requirement.split()],
            capture_output=True,
            text=True,
        )
        with log.open("a") as out:
            out.write(f"$ pip install {requirement}\n{done.stdout}{done.stderr}\n")
        entry = {"requirement": requirement, "ok": done.returncode == 0, "seconds": round(time.monotonic() - started)}
        if done.returncode != 0:
            entry["error"] = _tail(done.stderr or done.stdout)
            print(f"bench setup: {venv.name}: failed:\n{entry['error']}", file=sys.stderr)
        tried.append(entry)
        if done.returncode == 0:
            status = {"ok": True, "installed": requirement, "versions": _versions(venv)}
            break
    if not status["ok"]:
        status["error"] = "; ".join(f"{t['requirement']}: {t.get('error', '?')}" for t in tried)
    status.update(
        name=venv.name,
        requirements=list(venv.requirements),
        tried=tried,
        note=venv.note,
        created=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    )
    venv.status_file.write_text(json.dumps(status, indent=2) + "\n")
    return status


def setup_all(names: list[str] | None = None, *, force: bool = False) -> bool:
    """Set up the named peers (all by default); whether every one installed."""
    VENVS.mkdir(parents=True, exist_ok=True)
    ok = True
    for venv in PEERS:
        if names and venv.name not in names:
            continue
        status = setup_one(venv, force=force)
        ok = ok and bool(status.get("ok"))
    return ok


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.venvs", description="Set up the peer libraries' venvs.")
    parser.add_argument("names", nargs="*", help=f"only these ({', '.join(p.name for p in PEERS)})")
    parser.add_argument("--force", action="store_true", help="rebuild environments that are ready")
    args = parser.parse_args(argv)
    if not setup_all(args.names, force=args.force):
        print("bench setup: some peers could not be installed; the report will say so", file=sys.stderr)


if __name__ == "__main__":
    main()
