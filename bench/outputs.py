"""An automation output against a stand-in automation that ACKs at once, on SQLite, with
signals coming in over HTTP (``POST /rx/.../contact_id``) and over SIA DC-09 (TCP) at once:

- (a) the flow: as fast as the senders go, frames forwarded a second (the output's capacity);
- (b) latency: signals paced at ``--rate`` a second, below that capacity, and the time from a
  signal's receipt by the node to the automation's receipt of its frame (p50/p99), by path;
- (c) a backlog of committed signals (100,000 by default) drained once the automation is back;
- (d) the signal path's request latency (p50/p99, HTTP and DC-09) with no output at all, with
  the output delivering and with its automation down, in alternating rounds on one node.

Prints a table (bench/README.md).

    .venv/bin/python bench/outputs.py [--flow 20000] [--rate 300] [--paced 6000]
        [--backlog 100000] [--rounds 3] [--round-signals 4000]

Receipt is ``signal.received_us`` (the node's, before its commit), so (b) is an upper bound of
commit-to-receipt. Each signal has a panel, area and zone of its own
(``pending_latency.body_of``), so each frame names its signal, whichever way it came in.
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
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

from dc09_receiver import framed
from pending_latency import (
    DNIS,
    alarmhub,
    body_of,
    free_port,
    index_of,
    node_cpu_seconds,
    percentile,
    post_signals,
    provision,
    start_node,
    stop_node,
)

ACCOUNTS = 1_000
RUNAWAY_OFF = 1_000_000
CONNECTIONS = 8  # a path's: HTTP and DC-09 each
DC4, ACK = b"\x14", b"\x06"
SUPERVISION_SECONDS = 3600  # DC-09 accounts silent between rounds raise nothing


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


def dc09_frame(index: int, sequence: int) -> bytes:
    """Signal ``index`` as a plain ADM-CID frame on receiver 1 line 1 (the dnis of
    ``pending_latency.provision``): the same panel, event, area and zone as its HTTP body."""
    fields = json.loads(body_of(index, ACCOUNTS))
    panel = f"{int(fields['panel']):04d}"  # a DC-09 account has 3 to 16 digits
    event = "1" + fields["code"][1:]
    area, zone = int(fields["area"]), int(fields["zone_or_user"])
    body = f'"ADM-CID"{sequence:04d}R1L1#{panel}[#{panel}|{event} {area:02d} {zone:03d}]'
    return framed(body.encode())


class Paths:
    """Signals from one shared sequence over both ways in: ``CONNECTIONS`` keep-alive HTTP
    connections and as many DC-09 connections, each waiting for its answer before the next;
    paced at ``rate`` a second when given. Notes each request's latency by path."""

    def __init__(self, port: int, dc09_port: int, token: str) -> None:
        self.port, self.dc09_port, self.token = port, dc09_port, token

    def run(self, first: int, count: int, rate: float | None = None) -> dict[str, list[float]]:
        latencies: dict[str, list[float]] = {"http": [], "dc09": []}
        indexes = iter(range(first, first + count))
        started = time.perf_counter()

        def body(index: int) -> bytes:
            return body_of(index, ACCOUNTS)

        async def paced(index: int) -> None:
            if rate is not None:
                delay = started + (index - first) / rate - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)

        async def both() -> None:
            await asyncio.gather(
                *(
                    post_signals(self.port, self.token, indexes, body, latencies["http"], paced)
                    for _ in range(CONNECTIONS)
                ),
                *(self._dc09(indexes, paced, latencies["dc09"]) for _ in range(CONNECTIONS)),
            )

        asyncio.run(both())
        return latencies

    async def _dc09(
        self,
        indexes: Iterator[int],
        paced: Callable[[int], Awaitable[None]],
        out: list[float],
    ) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", self.dc09_port)
        for sequence, index in enumerate(indexes, start=1):
            await paced(index)
            sent = time.perf_counter()
            writer.write(dc09_frame(index, sequence % 9999 + 1))
            answer = await reader.readuntil(b"\r")
            if b'"ACK"' not in answer:
                raise SystemExit(f"signal {index} not ACKed over DC-09: {answer!r}")
            out.append(time.perf_counter() - sent)
        writer.close()


def received_us(db: Path) -> dict[int, int]:
    """Each stored signal's receipt by the node, by its index."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT panel, area, zone, received_us FROM signal").fetchall()
    return {index_of(p, a, z, ACCOUNTS): at for p, a, z, at in rows}


def queued(data_dir: Path) -> int:
    found = json.loads(alarmhub(data_dir, "output", "list", "--json"))
    return int(found[0]["queued"]) if found else 0


def wait_until(condition: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"never happened within {seconds:g} s: {what}")
        time.sleep(0.05)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def p50_p99(values: list[float]) -> str:
    values = sorted(values)
    return f"p50 {ms(statistics.median(values))}, p99 {ms(percentile(values, 0.99))}"


def add_output(data_dir: Path, automation: Automation) -> None:
    alarmhub(data_dir, "output", "add", "auto", "--protocol", "surgard",
             "--connect", f"127.0.0.1:{automation.port}", "--ack-timeout", "2")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--flow", type=int, default=20_000, help="signals of (a)")
    parser.add_argument("--rate", type=float, default=300.0, help="signals a second in (b)")
    parser.add_argument("--paced", type=int, default=6_000, help="signals of (b)")
    parser.add_argument("--backlog", type=int, default=100_000, help="signals of (c)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each state in (d)")
    parser.add_argument("--round-signals", type=int, default=4_000, help="signals a round of (d)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="alarmhub-bench-outputs-") as tmp:
        data_dir = Path(tmp) / "station"
        token, _ = provision(data_dir, ACCOUNTS)
        alarmhub(data_dir, "dc09", "line", "add", "--receiver", "1", "--line", "1",
                 "--dnis", DNIS)  # fmt: skip
        automation = Automation(free_port())
        add_output(data_dir, automation)
        port, dc09_port = free_port(), free_port()
        node = start_node(
            data_dir, port, RUNAWAY_OFF, Path(tmp) / "node.log",
            args=["--dc09-listen", f"127.0.0.1:{dc09_port}"],
            env={"ALARMHUB_DC09_SUPERVISION_SECONDS": str(SUPERVISION_SECONDS),
                 "ALARMHUB_LOG_LEVEL": "warning"},
        )  # fmt: skip
        try:
            paths = Paths(port, dc09_port, token)
            sent = run(args, data_dir, node.pid, paths, automation)
        finally:
            stop_node(node)
        print(f"signals sent in all: {sent}")


def run(
    args: argparse.Namespace, data_dir: Path, node_pid: int, paths: Paths, automation: Automation
) -> int:
    db = data_dir / "alarmhub.db"
    index = 0

    def forwarded() -> int:
        return len(automation.signal_frames())

    # (a) the flow, as fast as the senders go
    automation.start()
    cpu0, started = node_cpu_seconds(node_pid), time.monotonic()
    paths.run(index, args.flow)
    index += args.flow
    wait_until(lambda: forwarded() >= index, 600, "every frame of (a)")
    elapsed = time.monotonic() - started
    cpu = node_cpu_seconds(node_pid) - cpu0
    order = [identity(f) for _, f in automation.signal_frames()]
    print(f"(a) {args.flow:,} signals, half over HTTP and half over DC-09 ({CONNECTIONS}"
          f" connections each), the automation ACKing at once:")  # fmt: skip
    print(f"    {args.flow / elapsed:,.0f} frames/s forwarded (first signal sent to last"
          f" frame received), {cpu / args.flow * 1e6:,.0f} us of node CPU a signal")  # fmt: skip
    print(f"    frames received {len(order)}, distinct {len(set(order))}")
    # (b) paced below the output's capacity: receipt to the automation's receipt
    before = forwarded()
    first = index
    by_path = paths.run(index, args.paced, rate=args.rate)
    index += args.paced
    wait_until(lambda: forwarded() >= index, 300, "every frame of (b)")
    stored = received_us(db)
    frames = automation.signal_frames()[before:]
    delays = sorted(at / 1e9 - stored[identity(f)] / 1e6 for at, f in frames)
    late = [d for d in delays if d > 1.0]
    print(f"(b) {args.paced:,} signals paced at {args.rate:,.0f}/s (both paths): receipt to the"
          f" automation's receipt {p50_p99(delays)}, max {ms(delays[-1])},"
          f" over 1 s: {len(late)}")  # fmt: skip
    print(f"    request latency meanwhile: HTTP {p50_p99(by_path['http'])};"
          f" DC-09 {p50_p99(by_path['dc09'])}; frames {len(frames)} of signals"
          f" {first}..{index - 1}")  # fmt: skip
    # (c) the backlog: the automation down while signals are committed, then back
    automation.stop()
    paths.run(index, args.backlog)
    index += args.backlog
    wait_until(lambda: queued(data_dir) >= args.backlog, 120, "the backlog queued")
    before = forwarded()
    automation.start()
    started = time.monotonic()
    wait_until(lambda: forwarded() - before >= args.backlog, 3600, "drained")
    drained = time.monotonic() - started
    print(f"(c) a backlog of {args.backlog:,} frames drained in {drained:.1f} s:"
          f" {args.backlog / drained:,.0f} frames/s; queued after: {queued(data_dir)}")  # fmt: skip
    # (d) the signal path with no output, the output delivering, its automation down
    by_state: dict[str, dict[str, list[float]]] = {
        state: {"http": [], "dc09": []} for state in ("none", "up", "down")
    }
    for _ in range(args.rounds):
        for state in ("none", "up", "down"):
            if state == "none":
                alarmhub(data_dir, "output", "remove", "auto", "--force")
                time.sleep(2.5)  # the node lets the removed output go
            elif state == "up":
                add_output(data_dir, automation)
                automation.start()
                wait_until(lambda: queued(data_dir) == 0, 60, "the output up")
            else:
                automation.stop()
            latencies = paths.run(index, args.round_signals)
            index += args.round_signals
            for path, values in latencies.items():
                by_state[state][path] += values
    for state, found in by_state.items():
        print(f"(d) output {state:>4}: {sum(map(len, found.values())):,} signals;"
              f" HTTP {p50_p99(found['http'])}; DC-09 {p50_p99(found['dc09'])}")  # fmt: skip
    automation.stop()
    return index


if __name__ == "__main__":
    main()
