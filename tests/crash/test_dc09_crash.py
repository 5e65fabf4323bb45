"""DC-09 durability proven by killing processes: panels send uniquely identifiable events as
fast as their ACKs come while the node (or its writer process) is SIGKILLed. Every ACKed frame
must be stored, exactly once; and a retransmission of any frame sent before the kill, after
it, is acknowledged and still stored once (the retry window survives the restart)."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from tests.support import dc09_panel
from tests.support.crashing import alive, wait_for_writer
from tests.support.dc09_panel import Load, frame_for, identity, kind, stored
from tests.support.processes import wait_for

pytestmark = pytest.mark.long

SENDERS = 8
KILL_AFTER_ACKS = 1500
LOAD_SECONDS = 10.0  # at most, before the kill: a loaded machine acked fewer than 100 in 3 s


@pytest.mark.parametrize("victim", ["node", "writer"])
def test_every_acked_frame_is_stored_exactly_once(tmp_path: Path, victim: str) -> None:
    dc09_panel.provision(tmp_path)
    server, panel = dc09_panel.start(tmp_path)
    load = Load((panel.port,))
    accounts = [f"8{i:03d}" for i in range(SENDERS)]
    threads = [threading.Thread(target=load.run, args=(a,), daemon=True) for a in accounts]
    try:
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + LOAD_SECONDS
        while len(load.acked) < KILL_AFTER_ACKS and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(load.acked) >= 100, "too few ACKs before the kill for a meaningful test"
        assert server.process is not None
        if victim == "node":
            writer = wait_for_writer(server)
            server.process.send_signal(signal.SIGKILL)
            server.process.wait(timeout=30)
            load.stop.set()
            for thread in threads:
                thread.join(timeout=30)
            wait_for(lambda: not alive(writer), "the writer process ends with its node")
            server, panel = dc09_panel.start(tmp_path)  # a restart on the same data
        else:
            writer = wait_for_writer(server)
            os.kill(writer, signal.SIGKILL)
            wait_for_writer(server, not_pid=writer)
            acked_then = len(load.acked)
            wait_for(lambda: len(load.acked) > acked_then + 100, "ACKs again after the restart")
            load.stop.set()
            for thread in threads:
                thread.join(timeout=30)
        counts = stored(tmp_path)
        missing = load.missing(counts)
        assert not missing, f"{len(missing)} ACKed frames were not stored: {missing[:5]}"
        twice = [x for x, c in counts.items() if c > 1]
        assert not twice, f"stored more than once: {twice[:5]}"
        # every frame sent before and during the kill, sent again: ACKed, still stored once
        by_account: dict[str, list[int]] = {}
        for account, n in sorted(load.sent):
            by_account.setdefault(account, []).append(n)
        for account, numbers in by_account.items():
            for start in range(0, len(numbers), 200):
                chunk = numbers[start : start + 200]
                answers = panel.tcp([frame_for(account, n) for n in chunk])
                assert [kind(a) for a in answers] == ["ACK"] * len(chunk)
        counts = stored(tmp_path)
        assert all(counts[identity(a, n)] == 1 for a, n in load.sent)
        assert sum(counts.values()) == len(load.sent)
    finally:
        load.stop.set()
        server.kill()
