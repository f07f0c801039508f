"""The ``mcpdeck`` command line (``mcpdeck --help``)."""

from mcpdeck.cli._app import cli
from mcpdeck.cli._auth import auth_group
from mcpdeck.cli._chat import register_chat_command
from mcpdeck.cli._content import register_content_commands
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
    cli(prog_name="mcpdeck")
