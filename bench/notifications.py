"""Notifications in a storm, on SQLite, to a real SMTP server (aiosmtpd as its own process,
``tests/support/smtp_server.py``): rounds of 1,000 burglary alarms for 100 accounts whose three
contacts each subscribe to alarms by e-mail ("storm"), in turns with rounds of 1,000 alarms for
100 accounts nobody subscribes to ("quiet"), each round on accounts of its own:

- messages the SMTP server accepted a second (a storm round's, from its first signal to the last
  message of its events accepted) and how many: each recipient's first messages one by one, then
  a digest (at most ``core.digest.RATE`` a minute to one recipient);
- commit to acceptance, p50/p99, of every event of the storms: from the notification's
  ``queued_us`` (the time of the event the routing transaction committed) to the moment the
  server wrote the message that carried it (the message itself, or the digest);
- the signal path beside it: a paced stream of PROBE_RATE periodic tests a second from accounts of
  their own (the station's other panels), from each round's first signal until its last message
  is accepted (a quiet round: as long as the storm round before it), request latency p50/p99 in
  the storm rounds against the quiet ones; and the storm's own requests' latency (16 senders, as
  fast as they go) against the quiet rounds'. Every round, quiet or not, is watched the same
  way: a read of the database file every POLL_SECONDS (how many messages are queued).

    .venv/bin/python bench/notifications.py [--rounds 3] [--alarms 1000] [--accounts 100]
        [--no-gateway]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import csv
import itertools
import json
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

from pending_latency import (
    DNIS,
    alarmhub,
    child_running,
    cpu_seconds,
    free_port,
    node_cpu_seconds,
    percentile,
    post_signals,
    provision,
    start_node,
    stop_node,
    writer_pid,
)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.support below

from tests.support.smtp_server import SmtpServer

RUNAWAY_OFF = 1_000_000
CONTACTS = 3  # a subscribed account's
CONNECTIONS = 16
PROBE_RATE = 100  # periodic tests a second beside every round
PROBE_ACCOUNTS = 100
POLL_SECONDS = 0.5  # how often the end of a round's sending is looked for (in every round)


def account_of(panel: int) -> str:
    """The account ``pending_latency.provision`` makes of ``panel`` (its mask ``7#####``)."""
    return f"7{panel:05d}"


def body(panel: int, zone: int) -> bytes:
    return json.dumps(
        {"dnis": DNIS, "panel": str(panel), "code": "E130", "area": "01",
         "zone_or_user": f"{zone:03d}"}, separators=(",", ":"),
    ).encode()  # fmt: skip


def write_contacts(path: Path, panels: list[int]) -> None:
    with path.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["account", "name", "email", "notify", "notify_by"])
        for panel in panels:
            for n in range(1, CONTACTS + 1):
                address = f"s{n}.{account_of(panel)}@bench.example"
                out.writerow([account_of(panel), f"SUBSCRIBER {n}", address, "alarm", "email"])


def storm(port: int, token: str, first_panel: int, accounts: int, alarms: int) -> list[float]:
    """``alarms`` burglaries spread over the accounts of panels first_panel.., each a zone of
    its own (a new alarm), as fast as CONNECTIONS senders go; the request latencies."""
    latencies: list[float] = []
    indexes = iter(range(alarms))

    def signal(index: int) -> bytes:
        return body(first_panel + index % accounts, index // accounts + 1)

    async def senders() -> None:
        await asyncio.gather(
            *(post_signals(port, token, indexes, signal, latencies) for _ in range(CONNECTIONS))
        )

    asyncio.run(senders())
    return latencies


def probe_body(panel: int) -> bytes:
    return json.dumps(
        {"dnis": DNIS, "panel": str(panel), "code": "E602", "area": "00", "zone_or_user": "000"},
        separators=(",", ":"),
    ).encode()


class Probe:
    """PROBE_RATE periodic tests a second, paced (each sent at its planned time, or at once
    after the answer before it when late), from panels first_panel.. in turn, on one
    connection of a thread of its own; :meth:`take` hands the latencies since the last take."""

    def __init__(self, port: int, token: str, first_panel: int) -> None:
        self._latencies: list[float] = []
        self._stopping = threading.Event()
        self._thread = threading.Thread(
            target=asyncio.run, args=(self._send(port, token, first_panel),)
        )

    async def _send(self, port: int, token: str, first_panel: int) -> None:
        started = asyncio.get_running_loop().time()

        async def paced(index: int) -> None:
            await asyncio.sleep(
                max(0.0, started + index / PROBE_RATE - asyncio.get_running_loop().time())
            )

        indexes = itertools.takewhile(lambda _: not self._stopping.is_set(), itertools.count())
        await post_signals(port, token, indexes,
                           lambda index: probe_body(first_panel + index % PROBE_ACCOUNTS),
                           self._latencies, paced)  # fmt: skip

    def start(self) -> Probe:
        self._thread.start()
        return self

    def take(self) -> list[float]:
        taken, self._latencies[:] = self._latencies[:], []
        return taken

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(10)


def read(data_dir: Path, query: str) -> list[sqlite3.Row]:
    """Rows read from the station's database file beside the node (a command's process, as
    ``notify log``, would take the machine's CPU for a third of a second each time, and shows
    10,000 messages at most)."""
    uri = f"file:{data_dir / 'alarmhub.db'}?mode=ro"
    with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=10)) as db:
        db.row_factory = sqlite3.Row
        return db.execute(query).fetchall()


def queued(data_dir: Path) -> int:
    """The messages still queued."""
    return int(read(data_dir, "SELECT count(*) FROM notification WHERE state = 'queued'")[0][0])


def log(data_dir: Path) -> list[dict[str, object]]:
    """Every message (what ``notify log`` names ``id``, ``kind``, ``state``, ``to`` and
    ``queued_us``)."""
    rows = read(data_dir, "SELECT notification_id AS id, kind, state, recipient AS 'to',"
                          " queued_us FROM notification")  # fmt: skip
    return [dict(row) for row in rows]


def arrivals(smtp: SmtpServer) -> dict[str, list[tuple[float, str]]]:
    """Each recipient's messages as the server wrote them: (when, subject), in order."""
    found: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for envelope in sorted(smtp.directory.glob("*.json")):
        message = json.loads(envelope.read_text())
        raw = envelope.with_suffix(".eml").read_bytes()
        subject = next(
            (
                line[9:].decode().strip()
                for line in raw.splitlines()
                if line.startswith(b"Subject: ")
            ),
            "",
        )
        for to in message["rcpt_tos"]:
            found[to].append((envelope.stat().st_mtime, subject))
    return found


def carried(notes: list[dict[str, object]], got: dict[str, list[tuple[float, str]]]) -> list[float]:
    """Each notification's commit-to-acceptance (seconds): per recipient, the messages arrive in
    the order of its notifications; a digest carries every one queued before it arrived.
    ``notes``: oldest first."""
    delays: list[float] = []
    by_to: dict[str, list[dict[str, object]]] = defaultdict(list)
    for note in notes:
        by_to[str(note["to"])].append(note)
    for to, mine in by_to.items():
        messages = got.get(to, [])
        position = 0
        for arrived_at, subject in messages:
            if position >= len(mine):
                break
            if " events from " in subject:  # a digest: the rest of the lane's queue then
                take = [n for n in mine[position:] if int(n["queued_us"]) <= arrived_at * 1e6]  # type: ignore[call-overload]
            else:
                take = mine[position : position + 1]
            for note in take:
                delays.append(arrived_at - int(note["queued_us"]) / 1e6)  # type: ignore[call-overload]
            position += len(take)
    return delays


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="storm rounds (as many quiet)")
    parser.add_argument("--alarms", type=int, default=1_000, help="alarms a round")
    parser.add_argument("--accounts", type=int, default=100, help="accounts a round")
    parser.add_argument(
        "--no-gateway", action="store_true",
        help="set no SMTP gateway: the messages are queued in the routing transaction and wait,"
        " none is sent (the storm's cost on the signal path without the sending's)",
    )  # fmt: skip
    args = parser.parse_args()
    groups = 2 * args.rounds
    with tempfile.TemporaryDirectory(prefix="alarmhub-bench-notify-") as tmp:
        data_dir = Path(tmp) / "station"
        token, _ = provision(data_dir, groups * args.accounts + PROBE_ACCOUNTS)
        storms = [range(1 + g * args.accounts, 1 + (g + 1) * args.accounts)
                  for g in range(0, groups, 2)]  # fmt: skip
        contacts = Path(tmp) / "contacts.csv"
        write_contacts(contacts, [panel for panels in storms for panel in panels])
        alarmhub(data_dir, "contact", "import", str(contacts), "--json")
        smtp = SmtpServer(Path(tmp) / "smtp", free_port()).start()
        if not args.no_gateway:
            alarmhub(data_dir, "notify", "smtp", "--url", f"smtp://127.0.0.1:{smtp.port}",
                     "--from", "alarms@station.example")  # fmt: skip
        port = free_port()
        node = start_node(data_dir, port, RUNAWAY_OFF, Path(tmp) / "node.log",
                          env={"ALARMHUB_LOG_LEVEL": "warning"})  # fmt: skip
        try:
            run(args, data_dir, node.pid, port, token, smtp)
        finally:
            stop_node(node)
            smtp.stop()


def run(
    args: argparse.Namespace, data_dir: Path, node_pid: int, port: int, token: str,
    smtp: SmtpServer,
) -> None:  # fmt: skip
    requests: dict[str, list[float]] = {"storm": [], "quiet": []}
    # the probe's latencies while the round's signals came in, and after them until its window
    # ended (the storm's messages sent)
    intake: dict[str, list[float]] = {"storm": [], "quiet": []}
    after: dict[str, list[float]] = {"storm": [], "quiet": []}
    rates, counts = [], []
    cpu0 = node_cpu_seconds(node_pid)
    parts: dict[str, dict[str, float]] = {"storm": defaultdict(float), "quiet": defaultdict(float)}
    probe = Probe(port, token, 1 + 2 * args.rounds * args.accounts).start()
    time.sleep(1.0)  # its first requests (a new connection, the accounts' first signals)
    window = 0.0  # the last storm round's, from its first signal to its last message accepted
    for group in range(2 * args.rounds):
        state = "quiet" if group % 2 else "storm"
        first_panel = 1 + group * args.accounts
        before = len(list(smtp.directory.glob("*.json")))
        started = time.time()
        probe.take()
        at_start = process_cpu(node_pid, smtp)
        requests[state] += storm(port, token, first_panel, args.accounts, args.alarms)
        intake[state] += probe.take()
        for name, seconds in process_cpu(node_pid, smtp).items():
            parts[state][name] += seconds - at_start.get(name, 0.0)
        if state == "quiet" or args.no_gateway:
            while time.time() < started + window:  # watched as a storm round is
                queued(data_dir)
                time.sleep(max(0.0, min(POLL_SECONDS, started + window - time.time())))
            after[state] += probe.take()
            continue
        recipients = args.accounts * CONTACTS
        deadline = time.monotonic() + 300
        while queued(data_dir):
            if time.monotonic() > deadline:
                raise SystemExit("messages still queued after 300 s")
            time.sleep(POLL_SECONDS)
        files = sorted(smtp.directory.glob("*.json"))[before:]
        last = max(f.stat().st_mtime for f in files)
        window = last - started
        after[state] += probe.take()
        rates.append(len(files) / window)
        counts.append((len(files), recipients))
    probe.stop()
    cpu = node_cpu_seconds(node_pid) - cpu0
    if args.no_gateway:
        waiting = queued(data_dir)
        print(f"no gateway: {waiting:,} messages queued, none sent")
        print_latencies(requests, intake, after)
        print_cpu(parts, requests)
        print(f"  node CPU {cpu:.1f} s in all")
        return
    notes = sorted((n for n in log(data_dir) if n["kind"] != "digest"), key=lambda n: int(n["id"]))  # type: ignore[call-overload]
    sent = [n for n in notes if n["state"] == "sent"]
    delays = sorted(carried(sent, arrivals(smtp)))
    events = args.rounds * args.alarms * CONTACTS
    print(f"storm rounds: {args.rounds} x {args.alarms:,} alarms for {args.accounts} accounts,"
          f" {CONTACTS} subscribers each (e-mail); as many quiet rounds")  # fmt: skip
    for (messages, recipients), rate in zip(counts, rates, strict=True):
        print(f"  {messages} messages to {recipients} recipients, {rate:,.0f} accepted/s")
    print(f"  notifications {len(notes):,} (expected {events:,}), sent {len(sent):,},"
          f" carried to the server {len(delays):,}")  # fmt: skip
    print(f"  commit to acceptance: p50 {statistics.median(delays):.2f} s,"
          f" p99 {percentile(delays, 0.99):.2f} s, max {delays[-1]:.2f} s")  # fmt: skip
    print_latencies(requests, intake, after)
    print_cpu(parts, requests)
    print(f"  node CPU {cpu:.1f} s in all")


def process_cpu(node_pid: int, smtp: SmtpServer) -> dict[str, float]:
    """CPU seconds so far of the node and its workers, its writer, its delivery process and the
    SMTP server (the latter two: 0 until they run)."""
    writer = writer_pid(node_pid)
    delivery = child_running(node_pid, "alarmhub.outbound.delivery_process")
    found = {
        "writer": cpu_seconds(writer) if writer else 0.0,
        "delivery": cpu_seconds(delivery) if delivery else 0.0,
        "smtp server": cpu_seconds(smtp.pid) if smtp.pid else 0.0,
    }
    found["node"] = node_cpu_seconds(node_pid) - found["writer"] - found["delivery"]
    return found


def print_cpu(parts: dict[str, dict[str, float]], requests: dict[str, list[float]]) -> None:
    """Each process's CPU while the signals of each kind of round were sent (the storm's
    messages only in part: as many as went out meanwhile), a signal."""
    for state, cpu in parts.items():
        count = max(1, len(requests[state]))
        shares = ", ".join(f"{name} {seconds / count * 1e6:,.0f}" for name, seconds in cpu.items())
        print(f"  CPU a signal while the round's signals came in, {state:>5} rounds (µs): {shares}")


def print_latencies(
    requests: dict[str, list[float]], intake: dict[str, list[float]], after: dict[str, list[float]]
) -> None:
    beside = {state: intake[state] + after[state] for state in intake}
    for label, measured in (
        (f"signal path beside it ({PROBE_RATE} periodic tests/s)", beside),
        ("  of which while the round's signals came in", intake),
        ("  of which after them (its messages sent)", after),
        ("the storm's own signals (16 senders)", requests),
    ):
        for state, values in measured.items():
            if not values:
                continue
            values.sort()
            print(f"  {label}, {state:>5} rounds: {len(values):,} requests, p50"
                  f" {statistics.median(values) * 1000:.1f} ms, p99"
                  f" {percentile(values, 0.99) * 1000:.1f} ms")  # fmt: skip


if __name__ == "__main__":
    main()
