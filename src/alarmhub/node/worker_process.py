"""One worker of a node of several (``python -m alarmhub.node.worker_process FD PARENT``): it serves
the listeners its parent bound (HTTP and DC-09, handed over as file descriptors) in front of the
node's one writer, which it connects to.

Its parent (:mod:`alarmhub.node.workers`) sends it its configuration over the socket ``FD`` (never
on the command line, where other users of the machine could read a password), is told "ready" over
it once it serves, and stops it with SIGTERM (SIGINT, which a terminal sends the whole process
group, is left to the parent). The kernel kills it when the parent dies; should the parent's end of
the socket close anyway, it stops as on SIGTERM.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

from alarmhub import files, logs
from alarmhub import settings as settings_module
from alarmhub.node import lifeline
from alarmhub.node.app import WorkerRole
from alarmhub.node.server import Bound, Listener, run_bound
from alarmhub.store import framing

READY = b"ready"


def _configuration(sock: socket.socket) -> dict[str, Any] | None:
    buffer = bytearray()
    while not (messages := framing.decode_all(buffer)):
        data = sock.recv(65536)
        if not data:
            return None
        buffer += data
    config: dict[str, Any] = messages[0]
    return config


def bound_from(config: dict[str, Any]) -> Bound:
    """The listening sockets the parent handed over, as its configuration describes them."""
    listeners = [Listener(host, port, tuple(parts)) for host, port, parts, _ in config["http"]]
    http = [socket.socket(fileno=fd) for *_, fd in config["http"]]
    metrics = None
    if config["metrics"] is not None:
        host, port, fd = config["metrics"]
        metrics = Listener(host, port, ())
        http.append(socket.socket(fileno=fd))
    dc09 = [(socket.socket(fileno=tcp), socket.socket(fileno=udp)) for tcp, udp in config["dc09"]]
    return Bound(listeners, metrics, http, dc09)


def _watch_parent(sock: socket.socket) -> None:
    """Stop as on SIGTERM when the parent's end of ``sock`` closes (it sends nothing more)."""
    loop = asyncio.get_running_loop()

    def readable() -> None:
        try:
            data = sock.recv(4096, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            loop.remove_reader(sock.fileno())
            os.kill(os.getpid(), signal.SIGTERM)

    loop.add_reader(sock.fileno(), readable)


def main() -> None:
    lifeline.die_with_parent(int(sys.argv[2]))
    files.restrict_umask()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sock = socket.socket(fileno=int(sys.argv[1]))
    config = _configuration(sock)
    if config is None:
        return
    settings = settings_module.from_wire(config["settings"])
    index = int(config["index"])
    logs.configure(settings.log_level, settings.log_format, context={"worker": index})
    role = WorkerRole(index, config["writer"], Path(config["lead_lock"]))
    bound = bound_from(config)

    def ready() -> None:
        sock.sendall(READY)
        _watch_parent(sock)

    import uvloop

    uvloop.run(run_bound(settings, bound, ready, worker=role))


if __name__ == "__main__":
    main()
