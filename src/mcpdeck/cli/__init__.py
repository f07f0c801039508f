"""The ``mcpdeck`` command line (``mcpdeck --help``)."""

import atexit
import gc

from mcpdeck.cli._app import cli
from mcpdeck.cli._auth import auth_group
from mcpdeck.cli._chat_command import register_chat_command
from mcpdeck.cli._content_commands import register_content_commands
from mcpdeck.cli._gateway import register_gateway_command
from mcpdeck.cli._history import register_history_command
from mcpdeck.cli._import import register_file_commands
from mcpdeck.cli._serve import register_serve_commands
from mcpdeck.cli._servers import register_server_commands
from mcpdeck.cli._tools import register_tool_commands

register_server_commands(cli)
register_tool_commands(cli)
register_file_commands(cli)
cli.add_command(auth_group)
register_content_commands(cli)
register_history_command(cli)
register_chat_command(cli)
register_serve_commands(cli)
register_gateway_command(cli)

__all__ = ["cli", "main"]


def main() -> None:
    """Entry point of the ``mcpdeck`` script."""
    # When the command is done and every other exit handler has run (this one is registered before
    # them, so it runs after them), the objects left are frozen: the interpreter's shutdown then does
    # not walk them all for cycles again. Everything mcpdeck writes is closed by then (config writes
    # are atomic, the history is closed before this), and the process is ending: what a cycle holds
    # is given back with the process. That last walk was about a quarter of a short command's CPU
    # (bench/RESULTS.md), and as much again on every exit of `serve` and `gateway`.
    atexit.register(gc.freeze)
    cli(prog_name="mcpdeck")
