"""Receiver links against the disk, on SQLite: fsynced commits a second (the physical limit of
stop-and-wait), one Sur-Gard link stop-and-wait, many links draining backlogs at once (group
commit across links), and the memory of idle links. Prints a table (bench/README.md)."""

from __future__ import annotations

import argparse
import itertools
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import text

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.support below

from tests.support.receiver_sim import ReceiverSim, Settings, TcpClient, latencies

from alarmhub.clock import now_us
from alarmhub.core.surgard import contact_id_frame
from alarmhub.store import receivers, sqlite
from alarmhub.store.engine import open_engine, write_transaction
from alarmhub.store.receivers import LinkSettings
from pending_latency import (
    alarmhub,
    commit_metrics,
    descendants,
    free_port,
    node_cpu_seconds,
    percentile,
    start_node,
    stop_node,
    writer_cpu_seconds,
)

DNIS = "5000"
MASK = "5#####"
ACCOUNTS = 1_000
RUNAWAY_OFF = 1_000_000
IDLE_SETTLE_SECONDS = 3.0
LOG_MIB = 16
LOG_FILLER = """INSERT INTO filler (page)
    WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < :pages)
    SELECT zeroblob(4000) FROM n"""
ROUND_FRAMES = 20_000  # more than one link can send in a round of (b)


def commits_per_second(directory: Path, seconds: float) -> float:
    """One-row write transactions a second on a new SQLite database with the writer process's
    settings (``open_engine(writer=True)``: WAL, ``synchronous=FULL``, every commit fsyncs).

    The log is first grown to LOG_MIB and checkpointed, so that the commits overwrite it from
    its start, as a node's do between its log's restarts: commits that extend the file fsync
    its new size too, and were half as fast on the development machine."""
    engine = open_engine(f"sqlite:///{directory / f'limit-{time.monotonic_ns()}.db'}", writer=True)
    with write_transaction(engine) as conn:
        conn.execute(text("CREATE TABLE one_row (id INTEGER PRIMARY KEY, at INTEGER NOT NULL)"))
        conn.execute(text("CREATE TABLE filler (page BLOB NOT NULL)"))
        conn.execute(text(LOG_FILLER), {"pages": LOG_MIB * 256})
    sqlite.checkpoint(engine)
    insert = text("INSERT INTO one_row (at) VALUES (:at)")
    done = 0
    with engine.connect() as conn:
        conn = conn.execution_options(alarmhub_write=True)  # BEGIN IMMEDIATE, as the writer
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            with conn.begin():
                conn.execute(insert, {"at": time.time_ns()})
            done += 1
        elapsed = time.perf_counter() - start
    engine.dispose()
    return done / elapsed


def provision(data_dir: Path, links: int) -> list[int]:
    """Accounts 500001..ACCOUNTS behind one dnis; ``links`` Sur-Gard listen links, each with
    receiver 1 line 1 on that dnis (added through the store: a command a link takes a second);
    their ports."""
    alarmhub(data_dir, "dnis", "add", DNIS, "--mask", MASK)
    accounts = data_dir / "accounts.csv"
    rows = "".join(f"5{n:05d},BENCH {n}\n" for n in range(1, ACCOUNTS + 1))
    accounts.write_text("account,name\n" + rows)
    alarmhub(data_dir, "account", "import", str(accounts))
    ports = [free_port() for _ in range(links)]
    engine = open_engine(f"sqlite:///{data_dir / 'alarmhub.db'}")
    with write_transaction(engine) as conn:
        for index, port in enumerate(ports):
            name = f"rx{index}"
            link = LinkSettings(name, "surgard", "listen", f"127.0.0.1:{port}")
            receivers.add_link(conn, link, now_us())
            receivers.add_line(conn, name, 1, 1, DNIS, now_us())
    engine.dispose()
    return ports


def frames(link: int, count: int) -> list[bytes]:
    """E602 periodic tests (history only) of the provisioned accounts, from link ``link``'s own
    starting account."""
    return [
        contact_id_frame(1, 1, f"{(link * 61 + n) % ACCOUNTS + 1:04d}", "E602", "01", "001")
        for n in range(count)
    ]


def rss_kib(pid: int) -> int:
    """The resident memory of ``pid`` and its descendants (workers, writer process)."""
    total = 0
    for current in [pid, *descendants(pid)]:
        try:
            status = Path(f"/proc/{current}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total


@dataclass
class Drained:
    links: int
    frames: int
    acked: int
    resent: int
    seconds: float
    rate: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    cpu_us: float
    writer_us: float
    commits: int  # the writer's group commits meanwhile
    commit_ms: float  # their mean time, fsync included
    batch: float  # their mean signals
    generator: float  # the simulated receivers' CPU, in cores
    turnaround_ms: float  # p99 of a receiver's time from an ACK to its next frame


class Node:
    """A node on a new data directory with ``links`` listen links."""

    def __init__(self, root: Path, name: str, links: int) -> None:
        self.data_dir = root / name
        self.data_dir.mkdir()
        self.ports = provision(self.data_dir, links)
        self.log = root / f"{name}.log"
        self.port = free_port()
        self.process: subprocess.Popen[bytes] = start_node(
            self.data_dir, self.port, RUNAWAY_OFF, self.log
        )
        deadline = time.monotonic() + 30
        while not all(self.listening(port) for port in self.ports):
            if time.monotonic() > deadline:
                raise SystemExit(f"the links do not listen:\n{self.log.read_text()[-2000:]}")
            time.sleep(0.2)

    @staticmethod
    def listening(port: int) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            return False

    def stop(self) -> None:
        stop_node(self.process)


def drain(node: Node, per_link: int, seconds: float) -> Drained:
    """Each link's simulated receiver sends ``per_link`` frames stop-and-wait (at most for
    ``seconds``): the rate of ACKs, the frame-to-ACK latencies, the node's CPU a frame."""
    sims = [
        ReceiverSim(TcpClient("127.0.0.1", port), Settings(link_test_every=0)).start()
        for port in node.ports
    ]
    deadline = time.monotonic() + 30
    while not all(sim.connected for sim in sims):
        if time.monotonic() > deadline:
            raise SystemExit("the simulated receivers did not connect")
        time.sleep(0.05)
    pid = node.process.pid
    cpu, writer = node_cpu_seconds(pid), writer_cpu_seconds(pid)
    backlogs = [frames(index, per_link) for index in range(len(sims))]
    commits = commit_metrics(node.port)
    own = time.process_time()
    start = time.perf_counter()
    for sim, backlog in zip(sims, backlogs, strict=True):
        sim.send(backlog)
    for sim in sims:
        sim.wait_drained(max(0.0, seconds - (time.perf_counter() - start)))
    elapsed = time.perf_counter() - start
    own = time.process_time() - own
    cpu, writer = node_cpu_seconds(pid) - cpu, writer_cpu_seconds(pid) - writer
    after = commit_metrics(node.port)
    count = after["alarmhub_commit_seconds_count"] - commits["alarmhub_commit_seconds_count"]
    spent = after["alarmhub_commit_seconds_sum"] - commits["alarmhub_commit_seconds_sum"]
    batched = after["alarmhub_commit_batch_size_sum"] - commits["alarmhub_commit_batch_size_sum"]
    for sim in sims:
        sim.stop()
    deliveries = [d for sim in sims for d in sim.events()]
    turnarounds = sorted(  # a receiver's own time from an ACK to its next frame
        after.sends[0] - before.acked_at
        for sim in sims
        for before, after in itertools.pairwise(sim.events())
        if before.acked_at is not None and after.sends
    )
    acked = sum(1 for d in deliveries if d.acked)
    values = latencies(deliveries)
    return Drained(
        links=len(sims),
        frames=len(deliveries),
        acked=acked,
        resent=sum(max(0, len(d.sends) - 1) for d in deliveries),
        seconds=elapsed,
        rate=acked / elapsed,
        p50_ms=percentile(values, 0.50) * 1000,
        p99_ms=percentile(values, 0.99) * 1000,
        max_ms=(values[-1] if values else float("inf")) * 1000,
        cpu_us=cpu / max(acked, 1) * 1e6,
        writer_us=writer / max(acked, 1) * 1e6,
        commits=int(count),
        commit_ms=spent / max(count, 1) * 1000,
        batch=batched / max(count, 1),
        generator=own / elapsed,
        turnaround_ms=percentile(turnarounds, 0.99) * 1000,
    )


def run_links(root: Path, name: str, links: int, per_link: int, seconds: float) -> Drained:
    node = Node(root, name, links)
    try:
        return drain(node, per_link, seconds)
    finally:
        node.stop()


def one_link_rounds(root: Path, rounds: int, seconds: float) -> list[tuple[float, Drained]]:
    """(a) and (b) in turns on the same moments of the disk (its fsyncs vary several times
    over from one minute to the next): ``seconds`` of fsynced commits, then ``seconds`` of one
    link's frames, ``rounds`` times; the pairs."""
    node = Node(root, "one", 1)
    pairs = []
    try:
        drain(node, 200, seconds)  # warm-up: the node's first frames, pages read
        for _ in range(rounds):
            limit = commits_per_second(root, seconds)
            one = drain(node, ROUND_FRAMES, seconds)
            print(f"{'(a) fsynced one-row commits':<34} {limit:>9,.0f}/s", flush=True)
            show("(b) one link, stop-and-wait", one)
            pairs.append((limit, one))
    finally:
        node.stop()
    return pairs


def idle_rss(root: Path, name: str, links: int) -> int:
    """The node's RSS (KiB) with ``links`` idle listen links, once settled."""
    node = Node(root, name, links)
    try:
        time.sleep(IDLE_SETTLE_SECONDS)
        return rss_kib(node.process.pid)
    finally:
        node.stop()


def show(label: str, result: Drained) -> None:
    print(
        f"{label:<34} {result.rate:>9,.0f}/s  {result.acked:>7,} of {result.frames:,} ACKed in "
        f"{result.seconds:5.1f} s, resent {result.resent}; p50 {result.p50_ms:.1f} ms, "
        f"p99 {result.p99_ms:.1f} ms, max {result.max_ms:.1f} ms; CPU {result.cpu_us:.0f} µs a "
        f"frame (writer {result.writer_us:.0f}); {result.commits:,} commits of "
        f"{result.batch:.1f} frames, {result.commit_ms:.2f} ms each; the receivers "
        f"{result.generator:.0%} of a core, p99 {result.turnaround_ms:.2f} ms from an ACK to "
        "their next frame",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5, help="of (a) and (b) in turns")
    parser.add_argument("--round-seconds", type=float, default=4.0)
    parser.add_argument("--links", type=int, default=16)
    parser.add_argument("--backlog", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=300.0, help="at most, for (c)")
    parser.add_argument("--idle-links", type=int, default=100)
    parser.add_argument("--only-many", action="store_true", help="(c) alone, for profiling")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="alarmhub-bench-receivers-"))
    if args.only_many:
        show("(c)", run_links(root, "many", args.links, args.backlog, args.seconds))
        return
    pairs = one_link_rounds(root, args.rounds, args.round_seconds)
    many = run_links(root, "many", args.links, args.backlog, args.seconds)
    show(f"(c) {args.links} links, backlogs of {args.backlog:,}", many)
    after = commits_per_second(root, args.round_seconds)
    print(f"{'(a) fsynced one-row commits':<34} {after:>9,.0f}/s", flush=True)
    empty = idle_rss(root, "idle-0", 0)
    full = idle_rss(root, f"idle-{args.idle_links}", args.idle_links)
    limit = statistics.median(limit for limit, _ in pairs)
    one = statistics.median(d.rate for _, d in pairs)
    ratios = [d.rate / limit for limit, d in pairs]
    print()
    print(f"(a) physical limit, median of {len(pairs)}: {limit:,.0f} fsynced commits/s")
    print(
        f"(b) one link, median: {one:,.0f} frames/s: {statistics.median(ratios):.2f}x the limit "
        f"of its round (rounds {', '.join(f'{r:.2f}' for r in ratios)}; target >= 0.8x)"
    )
    print(
        f"(c) {args.links} links: {many.rate:,.0f} frames/s, {many.rate / one:.1f}x one link "
        f"(target >= 8x), {many.rate / after:.1f}x the limit right after; p50 "
        f"{many.p50_ms:.1f} ms, p99 {many.p99_ms:.1f} ms (target < 50 ms)"
    )
    print(
        f"(d) RSS with 0 links {empty / 1024:.1f} MiB, with {args.idle_links} idle links "
        f"{full / 1024:.1f} MiB: {(full - empty) / args.idle_links:.1f} KiB a link"
    )


if __name__ == "__main__":
    main()
