"""The writer process: the one place a node writes signals, in group commits.

It reads batches of signals from its parent over a socket, merges every batch that is waiting
into one transaction (one fsync), and answers with the incident numbers once that transaction is
committed. It runs apart from the HTTP process so that the database work never waits for, nor
holds up, the event loop's interpreter lock. It exits when its parent's end of the socket closes,
after finishing the commit in progress; SIGINT and SIGTERM are left to the parent.
"""

from __future__ import annotations

import logging
import signal
import socket
import sys
import time
from typing import Any

from alarmhub import logs
from alarmhub.store import framing
from alarmhub.store.commit import PlainCommit, SignalInsert, commit_signals, from_wire
from alarmhub.store.engine import open_engine, write_transaction

log = logging.getLogger("alarmhub.writer")
READ_SIZE = 1 << 20


def _read_available(sock: socket.socket, buffer: bytearray) -> bool:
    """Block for some bytes, then take whatever else is already there. False on EOF."""
    sock.setblocking(True)
    data = sock.recv(READ_SIZE)
    if not data:
        return False
    buffer += data
    sock.setblocking(False)
    try:
        while data := sock.recv(READ_SIZE):
            buffer += data
    except BlockingIOError:
        pass
    return True


def _configuration(sock: socket.socket, buffer: bytearray) -> dict[str, Any]:
    """The first frame from the parent: database URL and limits (never on the command line,
    where other users of the machine could read a password)."""
    while True:
        messages = framing.decode_all(buffer)
        if messages:
            config: dict[str, Any] = messages[0]
            return config
        if not _read_available(sock, buffer):
            raise SystemExit(0)


def run(sock: socket.socket) -> None:
    buffer = bytearray()
    config = _configuration(sock, buffer)
    logs.configure(config["log_level"], config["log_format"])
    engine = open_engine(config["url"])
    max_batch = int(config["max_batch"])
    statement = SignalInsert(engine)
    plain = PlainCommit(engine, statement)
    window_us = int(config["idempotency_hours"]) * 3600 * 1_000_000
    sock.sendall(framing.encode({"ready": True}))
    waiting: list[list[Any]] = []
    open_ = True
    while open_ or waiting:
        if open_ and (not waiting or _has_more(sock)):
            open_ = _read_available(sock, buffer)
            waiting += framing.decode_all(buffer)
        if not waiting:
            continue
        frames, rows = 0, 0
        while frames < len(waiting) and (frames == 0 or rows + len(waiting[frames]) <= max_batch):
            rows += len(waiting[frames])
            frames += 1
        batch = [from_wire(row) for frame in waiting[:frames] for row in frame]
        del waiting[:frames]
        started = time.perf_counter()
        reply: dict[str, Any]
        try:
            if any(sig.idempotency_key is not None for sig in batch):
                with write_transaction(engine) as conn:
                    stored = commit_signals(conn, statement, batch, window_us)
            else:
                stored = plain(batch)
            reply = {
                "frames": frames,
                "stored": [[x.incident_number, x.duplicate] for x in stored],
                "seconds": time.perf_counter() - started,
            }
        except Exception as exc:
            log.error("group commit failed", extra={"signals": len(batch), "error": repr(exc)})
            reply = {"frames": frames, "error": repr(exc)}
        try:
            sock.sendall(framing.encode(reply))
        except OSError:
            open_ = False  # the parent is gone; what is committed stays committed
    plain.close()
    engine.dispose()


def _has_more(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        return bool(sock.recv(1, socket.MSG_PEEK))
    except BlockingIOError:
        return False


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sock = socket.socket(fileno=int(sys.argv[1]))
    try:
        run(sock)
    except Exception:
        log.exception("writer process failed")
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
