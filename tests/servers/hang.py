"""A stdio "server" that never answers: it reads stdin until it closes and says nothing.

``python -m tests.servers.hang``. A host must give up on it after its startup timeout.
"""

from __future__ import annotations

import sys

if __name__ == "__main__":
    sys.stderr.write("hang: listening, but I will never answer\n")
    sys.stderr.flush()
    while sys.stdin.buffer.read(4096):
        pass
