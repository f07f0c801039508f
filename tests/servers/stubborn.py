"""The basic test server, but one that stays after its stdin closes: ``python -m tests.servers.stubborn``.

Many real servers do (a Node server whose timers keep its event loop alive, a wrapper that does not
watch its stdin); the host must end them itself, by signal, at shutdown. This one waits for a signal
after the SDK's stdio loop returns, whatever the platform's Node or Python would have done.
"""

from __future__ import annotations

import signal

from tests.servers.basic import build_server

if __name__ == "__main__":
    build_server().run()
    while True:  # stdin closed: wait for the SIGTERM the host sends (its default action ends the process)
        signal.pause()
