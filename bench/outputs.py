"""An automation output against a stand-in automation that ACKs at once, on SQLite: (a) frames
forwarded a second and the latency from a signal's receipt by the node to the automation's
receipt of its frame (p50/p99), while signals come in over HTTP; (b) a backlog of committed
signals (100,000 by default) drained once the automation comes back; (c) the signal path's
request latency (p50/p99) while the output delivers and while its automation is down, in
alternating rounds. Prints a table (bench/README.md).

    .venv/bin/python bench/outputs.py [--flow 20000] [--backlog 100000] [--rounds 3]

The latency of (a) runs from ``signal.received_us`` (the node's receipt, before its commit) to
the moment the stand-in read the frame: an upper bound of commit-to-receipt. Each signal has a
panel, area and zone of its own (``pending_latency.body_of``), so each frame names its signal.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import socket
import sqlite3
import statistics
import tempfile
import threading
import time
from pathlib import Path

from pending_latency import (
    DRIVER,
    SOURCE,
    alarmhub,
    body_of,
    free_port,
    index_of,
    node_cpu_seconds,
    percentile,
    provision,
    start_node,
    stop_node,
)

ACCOUNTS = 1_000
RUNAWAY_OFF = 1_000_000
CONNECTIONS = 16
DC4, ACK = b"\x14", b"\x06"


class Automation:
    """The stand-in: a TCP server on one port that reads Sur-Gard frames and ACKs each at once,
    noting when each arrived; it can be stopped (connections closed, port released) and started
    again on the same port."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.received: list[tuple[int, bytes]] = []  # (time.time_ns(), frame without DC4)
        self._server: socket.socket | None = None
        self._threads: list[threading.Thread] = []
        self._open: list[socket.socket] = []

    def start(self) -> None:
        if self._server is not None:
            return
        server = socket.socket()
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", self.port))
        server.listen()
        self._server = server
        thread = threading.Thread(target=self._accept, args=(server,), daemon=True)
        thread.start()
        self._threads.append(thread)

    def stop(self) -> None:
        if self._server is not None:
            with contextlib.suppress(OSError):
                self._server.shutdown(socket.SHUT_RDWR)
            self._server.close()
            self._server = None
        for conn in self._open:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)  # a close alone leaves a blocked recv reading
            conn.close()
        self._open.clear()

    def _accept(self, server: socket.socket) -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            self._open.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        held = b""
        try:
            while data := conn.recv(65536):
                held += data
                while DC4 in held:
                    frame, held = held.split(DC4, 1)
                    self.received.append((time.time_ns(), frame))
                    conn.sendall(ACK)
        except OSError:
            return

    def signal_frames(self) -> list[tuple[int, bytes]]:
        return [(at, frame) for at, frame in self.received if frame.startswith(b"5")]


def identity(frame: bytes) -> int:
    """The signal index a frame names: ``5RRL 18PPPPQXYZGGCCC``."""
    body = frame.split(b" ", 1)[1].decode()
    panel, area, zone = body[2:6], body[10:12], body[12:15]
    return index_of(panel, area, zone, ACCOUNTS)


async def send(port: int, token: str, first: int, count: int) -> list[float]:
    """Signals first..first+count-1 over CONNECTIONS keep-alive connections, each waiting for
    its answer before the next; the request latencies (seconds)."""
    latencies: list[float] = []
    indexes = iter(range(first, first + count))

    async def connection() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for index in indexes:
            body = body_of(index, ACCOUNTS)
            request = (
                f"POST /rx/{SOURCE}:{DRIVER}/contact_id HTTP/1.1\r\nHost: bench\r\n"
                f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n"
            ).encode() + body
            started = time.perf_counter()
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            answer = await reader.readexactly(length)
            if b" 200 " not in head.split(b"\r\n")[0]:
                raise SystemExit(f"signal {index} refused: {head!r} {answer!r}")
            latencies.append(time.perf_counter() - started)
        writer.close()

    await asyncio.gather(*(connection() for _ in range(CONNECTIONS)))
    return latencies


def received_us(db: Path) -> dict[int, int]:
    """Each stored signal's receipt by the node, by its index."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT panel, area, zone, received_us FROM signal").fetchall()
    return {index_of(p, a, z, ACCOUNTS): at for p, a, z, at in rows}


def queued(data_dir: Path) -> int:
    found = json.loads(alarmhub(data_dir, "output", "list", "--json"))
    return int(found[0]["queued"])


def wait_until(condition: object, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise SystemExit(f"never happened within {seconds:g} s: {what}")
        time.sleep(0.05)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--flow", type=int, default=20_000, help="signals of (a)")
    parser.add_argument("--backlog", type=int, default=100_000, help="signals of (b)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each state in (c)")
    parser.add_argument("--round-signals", type=int, default=5_000, help="signals a round of (c)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="alarmhub-bench-outputs-") as tmp:
        data_dir = Path(tmp) / "station"
        token, _ = provision(data_dir, ACCOUNTS)
        automation = Automation(free_port())
        alarmhub(data_dir, "output", "add", "auto", "--protocol", "surgard",
                 "--connect", f"127.0.0.1:{automation.port}", "--ack-timeout", "2")  # fmt: skip
        port = free_port()
        node = start_node(data_dir, port, RUNAWAY_OFF, Path(tmp) / "node.log")
        try:
            next_index = run(args, data_dir, node.pid, port, token, automation)
        finally:
            stop_node(node)
        print(f"signals sent in all: {next_index}")


def run(
    args: argparse.Namespace,
    data_dir: Path,
    node_pid: int,
    port: int,
    token: str,
    automation: Automation,
) -> int:
    db = data_dir / "alarmhub.db"
    index = 0
    # (a) the flow: signals in while the automation takes every frame at once
    automation.start()
    cpu0, started = node_cpu_seconds(node_pid), time.monotonic()
    asyncio.run(send(port, token, index, args.flow))
    index += args.flow
    wait_until(lambda: len(automation.signal_frames()) >= index, 300, "every frame of (a)")
    elapsed = time.monotonic() - started
    cpu = node_cpu_seconds(node_pid) - cpu0
    stored = received_us(db)
    delays = sorted((at / 1e9 - stored[identity(f)] / 1e6) for at, f in automation.signal_frames())
    order = [identity(f) for _, f in automation.signal_frames()]
    print(f"(a) {args.flow} signals over HTTP ({CONNECTIONS} connections), forwarded at once:")
    print(f"    {args.flow / elapsed:,.0f} frames/s forwarded (from the first signal sent to the")
    print(f"    last frame received), {cpu / args.flow * 1e6:,.0f} us of node CPU a signal")
    print(f"    receipt to the automation's receipt: p50 {ms(percentile(delays, 0.5))},"
          f" p99 {ms(percentile(delays, 0.99))}, max {ms(delays[-1])}")  # fmt: skip
    print(f"    frames received {len(order)}, distinct {len(set(order))}")
    # (b) the backlog: the automation down while signals are committed, then back
    automation.stop()
    asyncio.run(send(port, token, index, args.backlog))
    index += args.backlog
    wait_until(lambda: queued(data_dir) >= args.backlog, 120, "the backlog queued")
    before = len(automation.signal_frames())
    automation.start()
    started = time.monotonic()
    wait_until(lambda: len(automation.signal_frames()) - before >= args.backlog, 3600, "drained")
    drained = time.monotonic() - started
    print(f"(b) a backlog of {args.backlog:,} frames drained in {drained:.1f} s:"
          f" {args.backlog / drained:,.0f} frames/s; queued after: {queued(data_dir)}")  # fmt: skip
    # (c) the signal path while the output delivers and while it is down, alternating
    by_state: dict[str, list[float]] = {"up": [], "down": []}
    for _ in range(args.rounds):
        for state in ("up", "down"):
            if state == "up":
                automation.start()
            else:
                automation.stop()
            latencies = asyncio.run(send(port, token, index, args.round_signals))
            index += args.round_signals
            by_state[state] += latencies
    automation.start()
    for state, values in by_state.items():
        values.sort()
        print(f"(c) output {state:>4}: {len(values)} signals, request p50"
              f" {ms(statistics.median(values))}, p99 {ms(percentile(values, 0.99))}")  # fmt: skip
    automation.stop()
    return index


if __name__ == "__main__":
    main()
