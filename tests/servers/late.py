"""A stdio server that starts when the test says so: ``python -m tests.servers.late FIFO COMMAND...``.

It opens the named pipe ``FIFO`` for reading, which blocks until the test opens it for writing,
then becomes ``COMMAND`` (``exec``) on the same stdin, stdout and stderr: what the host wrote to it
meanwhile is waiting in the pipe. Until then it is a server that is still starting, for as long as
the test wants, with no clock involved.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":
    fifo, command = sys.argv[1], sys.argv[2:]
    with open(fifo, "rb"):
        pass
    os.execvp(command[0], command)
