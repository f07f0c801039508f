"""Running ``mcpdeck`` at a real (pseudo-)terminal, answering its questions as they come."""

from __future__ import annotations

import contextlib
import os
import pty
import select
import subprocess
import sys
import termios
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import cli_environment

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class TerminalRun:
    """What a run at a terminal did: its exit code and every byte it wrote to the terminal."""

    returncode: int
    output: bytes

    @property
    def text(self) -> str:
        return self.output.decode("utf-8", errors="surrogateescape")


def run_in_terminal(
    config: Path,
    *args: str,
    answers: Sequence[tuple[str, str]] = (),
    env: dict[str, str] | None = None,
    timeout: float = 60,
) -> TerminalRun:
    """Run ``mcpdeck --config CONFIG ARGS`` with stdin, stdout and stderr on one pseudo-terminal.

    Each answer is ``(text to wait for, what to type)``: it is typed once the text has
    appeared (after the previous answer's). The terminal does not echo what is typed and
    does not turn ``\\n`` into ``\\r\\n``, so every byte read is one mcpdeck wrote.
    """
    master, slave = pty.openpty()
    attributes = termios.tcgetattr(slave)
    attributes[1] &= ~termios.ONLCR  # output: "\n" stays "\n"
    attributes[3] &= ~termios.ECHO  # input: not echoed back
    termios.tcsetattr(slave, termios.TCSANOW, attributes)
    environ = cli_environment(config.parent, **(env or {}))
    process = subprocess.Popen(
        [sys.executable, "-m", "mcpdeck.cli", "--config", str(config), *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=environ,
        cwd=ROOT,
        start_new_session=True,
    )
    os.close(slave)
    output = bytearray()
    pending = list(answers)
    seen = 0  # answers are looked for after this offset
    deadline = time.monotonic() + timeout
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"mcpdeck {' '.join(args)} did not finish; it wrote:\n{bytes(output)!r}")
            ready, _, _ = select.select([master], [], [], remaining)
            if not ready:
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every process holding the terminal has closed it
                break
            if not chunk:
                break
            output += chunk
            while pending:
                found = output.find(pending[0][0].encode(), seen)
                if found < 0:
                    break
                seen = found + len(pending[0][0].encode())
                os.write(master, pending.pop(0)[1].encode())
        returncode = process.wait(timeout=max(deadline - time.monotonic(), 1))
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        with contextlib.suppress(OSError):
            os.close(master)
    return TerminalRun(returncode, bytes(output))
