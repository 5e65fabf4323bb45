"""A child process for the spawner's tests (``python -m tests.support.spawned FD CODE``): it
tells its parent over the socket ``FD`` what it sees of itself (pids, descriptors, signal
dispositions, environment), counts one metric, waits until the parent closes its end, and exits
with ``CODE``."""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
from pathlib import Path

from alarmhub import metrics


def _descriptors() -> dict[str, str]:
    found = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            found[name] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue  # the listing's own, closed by now
    return found


def main() -> None:
    sock = socket.socket(fileno=int(sys.argv[1]))
    metrics.HEARTBEATS.inc()
    report = {
        "pid": os.getpid(),
        "ppid": os.getppid(),
        "argv": sys.argv[1:],
        "fds": _descriptors(),
        "sigint": repr(signal.getsignal(signal.SIGINT)),
        "sigterm": repr(signal.getsignal(signal.SIGTERM)),
        "mark": os.environ.get("SPAWNED_MARK"),
        "comm": Path("/proc/self/comm").read_text().strip(),
    }
    sock.sendall(json.dumps(report).encode())
    while sock.recv(4096):
        pass
    raise SystemExit(int(sys.argv[2]))


if __name__ == "__main__":
    main()
