"""The delivery process ends by itself once its channel to the node has closed, within
``END_SECONDS``, whatever it waits for: its node may be dead (SIGKILL), with nobody left to kill
it. Here the process runs ``python -m``-style on a socket pair as the node starts it, with a
delivery worker whose stop never returns (as one waiting on a server that no longer answers),
and a shorter ``END_SECONDS``; beside it, a worker that stops at once ends the process at once
and cleanly."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from alarmhub.store import framing
from tests.support.database import database_url

CHILD = """
import asyncio, sys
from alarmhub.outbound import delivery_process

class Worker:
    async def start(self):
        pass

    async def stop(self):
        if sys.argv[2] == "hangs":
            await asyncio.Event().wait()

delivery_process.workers = lambda *args: [Worker()]
delivery_process.END_SECONDS = 1.0
delivery_process.main()
"""


@pytest.mark.parametrize("stop", ["hangs", "returns"])
def test_the_process_ends_in_time_once_its_node_is_gone(tmp_path: Path, stop: str) -> None:
    ours, theirs = socket.socketpair()
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(theirs.fileno()), stop],
        pass_fds=[theirs.fileno()],
        stderr=subprocess.PIPE,
        text=True,
    )
    theirs.close()
    config = {"url": database_url(tmp_path), "data_dir": str(tmp_path), "log_level": "info",
              "log_format": "keyvalue", "timezone": "UTC", "answer_seconds": 30.0}  # fmt: skip
    ours.sendall(framing.encode(config))
    ours.settimeout(60)
    assert ours.recv(16) == b"ready"
    closed_at = time.monotonic()
    ours.close()  # as the node's end closes when the node is killed
    code = child.wait(timeout=60)
    ended = time.monotonic() - closed_at
    log = child.stderr.read() if child.stderr else ""
    print(
        f"\nthe worker's stop {stop}: the process ended {ended:.2f} s after its channel closed, "
        f"code {code}"
    )
    if stop == "hangs":
        assert code == 1, log
        assert "delivery process end overdue" in log
        assert ended >= 1.0
    else:
        assert code == 0, log
        assert "overdue" not in log
