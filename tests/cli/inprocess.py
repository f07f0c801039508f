"""Running ``mcpdeck`` in this process with Click's runner, answering like ``subprocess.run`` does.

A real process costs an interpreter start and every import (most of a CLI test's time) and shows
nothing more for what a command prints and returns. The tests that need a process (exit on a
signal, no orphans, what a command imports, a terminal) keep starting one.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
from collections.abc import Generator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

import anyio
from click.testing import CliRunner

from mcpdeck.cli import cli
from tests.helpers import ROOT, cli_environment
from tests.support.serve_process import environment


def mcpdeck(
    args: Sequence[str], *, env: Mapping[str, str | None], cwd: Path | None = None, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """Run ``mcpdeck ARGS`` in this process: exit code, stdout and stderr as a child process gives them.

    ``env`` is the whole environment the command sees (as ``subprocess.run(env=...)``: names not in
    it are unset while it runs); ``cwd`` is its working directory; ``stdin`` what it reads. Everything
    is put back afterwards, including the log handler a command installs on stderr (each run shows its
    own warnings, as each process would).
    """
    environment = {name: None for name in os.environ if name not in env} | dict(env)
    root = logging.getLogger()
    handlers = list(root.handlers)
    before = Path.cwd()
    if cwd is not None:
        os.chdir(cwd)
    with _pipe(stdin) as source:
        try:
            result = CliRunner().invoke(
                cli, list(args), input=source, env=environment, prog_name="mcpdeck", catch_exceptions=False
            )
        finally:
            os.chdir(before)
        for handler in list(root.handlers):
            if handler not in handlers:
                root.removeHandler(handler)
    return subprocess.CompletedProcess(["mcpdeck", *args], result.exit_code, result.stdout, result.stderr)


@contextmanager
def _pipe(text: str) -> Generator[BinaryIO]:
    """A pipe that holds ``text`` and then ends: standard input as a child process with ``input=`` gets it
    (a file descriptor, not a terminal; Click's own in-memory input has no descriptor, which mcpdeck
    takes for a closed standard input)."""
    data = text.encode()
    if len(data) >= 65536:
        raise ValueError("the input does not fit in a pipe's buffer; pass less")
    read, write = os.pipe()
    with os.fdopen(write, "wb") as writer:
        writer.write(data)
    with os.fdopen(read, "rb") as reader:
        yield reader


def invoker(folder: Path) -> Any:
    """``invoke(*args)``: the CLI in this process (in a worker thread: a command may run its own event loop)."""
    runner = CliRunner()
    env = environment(folder)
    config = str(folder / "mcp.json")

    async def invoke(*args: str) -> Any:
        return await anyio.to_thread.run_sync(
            lambda: runner.invoke(cli, ["--config", config, *args], env=env, catch_exceptions=False)
        )

    return invoke


def run(config: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``mcpdeck --config CONFIG ARGS`` (in this process) and return what it did."""
    return mcpdeck(["--config", str(config), *args], env=cli_environment(config.parent, **(env or {})), cwd=ROOT)


def write(config: Path, servers: dict[str, Any], **extra: Any) -> None:
    config.write_text(json.dumps({"mcpServers": servers, **extra}, indent=2))
