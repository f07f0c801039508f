"""The ``mcpdeck`` command line (``mcpdeck --help``)."""

from mcpdeck.cli._app import cli
from mcpdeck.cli._auth import auth_group
from mcpdeck.cli._chat import register_chat_command
from mcpdeck.cli._content import register_content_commands
from mcpdeck.cli._gateway import register_gateway_command
from mcpdeck.cli._history import register_history_command

cli.add_command(auth_group)
register_content_commands(cli)
register_history_command(cli)
register_chat_command(cli)
register_gateway_command(cli)

__all__ = ["cli", "main"]


def main() -> None:
    """Entry point of the ``mcpdeck`` script."""
    cli(prog_name="mcpdeck")
