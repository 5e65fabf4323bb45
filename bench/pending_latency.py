#!/usr/bin/env python3
"""Alarm processing latency: a signal posted -> visible as a pending alarm (open loop).

What is measured: for every signal ``POST /rx/bench-site:bench/contact_id``, the time from the
moment it was *planned* to be sent until a separate poller first sees its row in the ``alarm``
table. Send times are planned in advance (signal i of a phase is due at t0 + i/rate), and the
latency is counted from the planned time, so a client that falls behind adds to the figures
instead of hiding them (the coordinated-omission rule). One run measures every rate given, each
for a short warm-up (not counted) and then ``--duration`` seconds.

How: a fresh temporary data directory is provisioned with the real CLI (driver, token, dnis
``1234`` with mask ``7#####``, ``--accounts`` generated accounts imported from CSV) and a node is
started with ``python -m alarmhub serve`` and ``ALARMHUB_RUNAWAY_LIMIT`` set high: signals are
spread over the accounts, yet at 5,000/s every account sends far more than 10 signals in
2 minutes, which runaway suppression would (correctly) keep out of the pending queue. The load
comes from one or more processes, each an asyncio client with its share of the rate and of the
keep-alive connections (256 by default: 64 connections hold at most 64 requests in flight,
12.8 ms a request at 5,000/s, and whenever the node answers slower than that the client queues;
that queueing is counted, but the connection count would then shape the figures). Every signal
is E110, E120 or E130 (operator-handled: each makes a pending alarm) with a unique
panel/area/zone that maps back to its index. The poller is a process
of its own with a read-only SQLite connection that runs
``SELECT alarm_id, panel, area, zone FROM alarm WHERE alarm_id > ?`` every ``--poll-interval``
and stamps when each alarm was first seen.

    .venv/bin/python bench/pending_latency.py [--rates 1000,5000] [--duration 12] [--warmup 3]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import csv
import json
import math
import multiprocessing as mp
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from multiprocessing.sharedctypes import Synchronized
from pathlib import Path
from typing import Any

import mix
from alarmhub.node import spawner

TARGET_RATE = 1000
TARGET_P99_MS = 100.0
QUIET_PERCENT = 15.0  # CPU of other processes (% of one core) above which a run is disturbed
DNIS = "1234"
DRIVER = "bench"
SOURCE = "bench-site"
CODES = ("E130", "E110", "E120")
AREAS = 99  # area 01-99
ZONES = 999  # zone 001-999
POLL_SQL = "SELECT alarm_id, panel, area, zone FROM alarm WHERE alarm_id > ? ORDER BY alarm_id"


# identity of a signal ------------------------------------------------------------------------


def body_of(index: int, accounts: int) -> bytes:
    """The JSON body of signal ``index``: its panel, area and zone identify it uniquely."""
    panel = index % accounts + 1
    rest = index // accounts
    area, zone = rest // ZONES + 1, rest % ZONES + 1
    if area > AREAS:
        raise ValueError("too many signals for unique panel/area/zone identities")
    code = CODES[index % len(CODES)]
    return (
        f'{{"dnis":"{DNIS}","panel":"{panel}","code":"{code}",'
        f'"area":"{area}","zone_or_user":"{zone}"}}'
    ).encode()


def index_of(panel: str, area: str, zone: str, accounts: int) -> int:
    """The inverse of :func:`body_of`, from the stored (normalised) alarm row."""
    rest = (int(area) - 1) * ZONES + int(zone) - 1
    return rest * accounts + int(panel) - 1


# load generator (one process per share of the rate) ----------------------------------------


@dataclass(frozen=True)
class Share:
    """One load process's part of a phase: signals first+worker, first+worker+workers, ..."""

    host: str
    port: int
    token: str
    accounts: int
    first: int
    count: int
    rate: float
    t0: float
    worker: int
    workers: int
    connections: int
    warm: int  # signals first..first+warm-1 are the warm-up
    deadline: float  # monotonic: stop sending and waiting at this time
    mix: str = ""  # "realistic": the bodies of bench/mix.py instead of body_of's


def _request(share: Share, index: int) -> bytes:
    body = mix.body_at(index, share.accounts) if share.mix else body_of(index, share.accounts)
    return (
        f"POST /rx/{SOURCE}:{DRIVER}/contact_id HTTP/1.1\r\n"
        f"Host: {share.host}:{share.port}\r\n"
        f"Authorization: Bearer {share.token}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


def header(head: bytes, name: bytes) -> bytes | None:
    """The value of header ``name`` (lower case) in an HTTP/1.1 message's ``head``."""
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.lower() == name:
            return value.strip()
    return None


async def read_message(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """One HTTP/1.1 message from ``reader``: its head and its body (by Content-Length)."""
    head = await reader.readuntil(b"\r\n\r\n")
    return head, await reader.readexactly(int(header(head, b"content-length") or 0))


async def post_signals(
    port: int,
    token: str,
    indexes: Iterator[int],
    body: Callable[[int], bytes],
    out: list[float],
    paced: Callable[[int], Awaitable[None]] | None = None,
) -> None:
    """One keep-alive connection posting signals ``body(index)`` for the ``indexes`` it takes
    (shared by several connections), each after the last one's answer (and ``paced(index)``);
    each request's latency (seconds) appended to ``out``. Exits on any answer but 200."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    for index in indexes:
        if paced is not None:
            await paced(index)
        content = body(index)
        request = (
            f"POST /rx/{SOURCE}:{DRIVER}/contact_id HTTP/1.1\r\nHost: bench\r\n"
            f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(content)}\r\n\r\n"
        ).encode() + content
        sent = time.perf_counter()
        writer.write(request)
        head, answer = await read_message(reader)
        if b" 200 " not in head.split(b"\r\n")[0]:
            raise SystemExit(f"signal {index} refused: {head!r} {answer!r}")
        out.append(time.perf_counter() - sent)
    writer.close()


def serve_until(handle: Any, port: int, stop: Any) -> None:
    """Serve connections on 127.0.0.1:``port`` with ``handle`` until ``stop`` is set."""

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
        async with server:
            while not stop.is_set():
                await asyncio.sleep(0.1)

    asyncio.run(main())


async def _response_status(reader: asyncio.StreamReader) -> int:
    head, _ = await read_message(reader)
    return int(head[9:12])


async def _run_share(share: Share) -> dict[str, Any]:
    """Send this share's signals on schedule; (index, status, sent, answered) for each."""
    queue: asyncio.Queue[int] = asyncio.Queue()
    results: list[tuple[int, int, float, float]] = []
    enqueued = measured = 0
    cpu: dict[str, float] = {}

    async def connect() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.wait_for(asyncio.open_connection(share.host, share.port), 5)

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                index = await queue.get()
                if index < 0:
                    return
                sent = time.monotonic()
                try:
                    writer.write(_request(share, index))
                    status = await _response_status(reader)
                except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
                    status = 0
                    print(f"load {share.worker}: {exc!r}; reconnecting", file=sys.stderr)
                    writer.close()
                    reader, writer = await connect()
                results.append((index, status, sent, time.monotonic()))
        finally:
            writer.close()

    async def schedule() -> None:
        nonlocal enqueued, measured
        period = 1.0 / share.rate
        for index in range(share.first + share.worker, share.first + share.count, share.workers):
            due = share.t0 + (index - share.first) * period
            while (delay := due - time.monotonic()) > 0:  # the loop may wake a little early
                await asyncio.sleep(delay)
            if time.monotonic() >= share.deadline:
                break
            queue.put_nowait(index)
            enqueued += 1
            if index - share.first >= share.warm:
                if not measured:
                    cpu.update(cpu0=time.process_time(), wall0=time.monotonic())
                measured += 1
        cpu.update(cpu1=time.process_time(), wall1=time.monotonic())
        for _ in range(share.connections):
            queue.put_nowait(-1)

    opened = await asyncio.gather(*(connect() for _ in range(share.connections)))
    ready = time.monotonic()
    workers = [asyncio.ensure_future(connection(r, w)) for r, w in opened]
    scheduler = asyncio.ensure_future(schedule())
    everything = asyncio.gather(scheduler, *workers)
    with contextlib.suppress(TimeoutError):  # what is unanswered by then counts as no answer
        await asyncio.wait_for(everything, max(0.1, share.deadline - time.monotonic()))
    busy = 0.0
    if "cpu0" in cpu and cpu["wall1"] > cpu["wall0"]:
        busy = (cpu["cpu1"] - cpu["cpu0"]) / (cpu["wall1"] - cpu["wall0"])
    return {
        "results": results,
        "enqueued": enqueued,
        "measured": measured,
        "ready": ready,
        "cpu": busy,
    }


def load_process(share: Share, out: Any) -> None:
    """Entry point of a load process: run the share, put the outcome on ``out``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if share.mix:
        mix.realistic_cycle(share.accounts)  # drawn before the first send is due
    try:
        import uvloop

        outcome = uvloop.run(_run_share(share))
    except ImportError:
        outcome = asyncio.run(_run_share(share))
    out.put(outcome)


# poller ---------------------------------------------------------------------------------------


def gather(procs: Sequence[Any], out: Any, deadline: float) -> list[dict[str, Any]]:
    """What each load process put on ``out`` by ``deadline`` (monotonic), then the processes
    joined (killed if they linger)."""
    outcomes = []
    for _ in procs:
        try:
            outcomes.append(out.get(timeout=max(1.0, deadline - time.monotonic())))
        except Exception:
            print("a load process gave no result in time", file=sys.stderr)
            break
    for proc in procs:
        proc.join(timeout=10)
        if proc.is_alive():
            proc.kill()
    return outcomes


def poll_process(
    db: str,
    after: int,
    interval: float,
    stop: Any,
    seen_count: Synchronized[int],
    deadline: float,
    out: Any,
) -> None:
    """Poll the alarm table; put [(alarm_id, panel, area, zone, first_seen)] and cycle times."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, isolation_level=None)
    seen: list[tuple[int, str, str, str, float]] = []
    cycles: list[float] = []
    queries: list[float] = []
    last = after
    previous = born = time.monotonic()
    while not stop.is_set() and time.monotonic() < deadline:
        started = time.monotonic()
        rows = conn.execute(POLL_SQL, (last,)).fetchall()
        now = time.monotonic()
        queries.append(now - started)
        cycles.append(now - previous)
        previous = now
        if rows:
            last = rows[-1][0]
            seen += [(r[0], r[1], r[2], r[3], now) for r in rows]
            seen_count.value = len(seen)
        time.sleep(interval)
    conn.close()
    busy = time.process_time() / max(1e-9, time.monotonic() - born)
    out.put({"seen": seen, "cycles": cycles, "queries": queries, "cpu": busy})


# node and provisioning ------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# the setting that lets `webhook add` take a receiver on this machine (a private target)
ALLOW_PRIVATE = {"ALARMHUB_WEBHOOK_ALLOW_PRIVATE": "1"}


def alarmhub(data_dir: Path, *args: str, env: dict[str, str] | None = None) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "alarmhub", *args, "--data-dir", str(data_dir)],
        check=True, capture_output=True, text=True, timeout=300,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    return out.stdout


def provision(data_dir: Path, accounts: int) -> tuple[str, str]:
    """Driver, token, dnis with its line mask, accounts; the token and the mask."""
    width = max(5, len(str(accounts)))
    if 1 + width > 9:
        raise SystemExit("--accounts too large for a 9-character account number")
    mask = "7" + "#" * width
    alarmhub(data_dir, "driver", "add", DRIVER)
    token = json.loads(
        alarmhub(data_dir, "token", "create", "--name", "bench", "--driver", DRIVER, "--json")
    )["token"]
    alarmhub(data_dir, "dnis", "add", DNIS, "--mask", mask)
    accounts_csv = data_dir / "accounts.csv"
    with accounts_csv.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["account", "name"])
        for panel in range(1, accounts + 1):
            out.writerow([f"7{panel:0{width}d}", f"BENCH ACCOUNT {panel}"])
    imported = json.loads(alarmhub(data_dir, "account", "import", str(accounts_csv), "--json"))
    if imported["added"] != accounts:
        raise SystemExit(f"account import added {imported['added']} of {accounts}")
    return token, mask


def start_node(
    data_dir: Path,
    port: int,
    runaway_limit: int,
    log: Path,
    *,
    args: Sequence[str] = (),
    env: dict[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """``alarmhub serve`` on ``port`` (and ``args``), once its /healthz answers 200."""
    env = {**os.environ, "ALARMHUB_RUNAWAY_LIMIT": str(runaway_limit), **(env or {})}
    with log.open("wb") as fh:
        node = subprocess.Popen(
            [sys.executable, "-m", "alarmhub", "serve", "--listen", f"127.0.0.1:{port}",
             "--data-dir", str(data_dir), *args],
            stdout=fh, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if node.poll() is not None:
            raise SystemExit(f"the node exited ({node.returncode}):\n{log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as r:
                if r.status == 200:
                    return node
        except OSError:
            pass
        time.sleep(0.1)
    node.kill()
    raise SystemExit(f"the node did not become healthy in 30 s:\n{log.read_text()[-2000:]}")


def stop_node(node: subprocess.Popen[bytes]) -> None:
    """SIGTERM (the node commits what is queued and exits), SIGKILL if it hangs; the same for
    its writer child, so that a stalled run leaves nothing behind."""
    writer = writer_pid(node.pid)
    if node.poll() is None:
        node.terminate()
        try:
            node.wait(timeout=60)
        except subprocess.TimeoutExpired:
            node.kill()
            node.wait(timeout=10)
    if writer is not None:
        deadline = time.monotonic() + 10
        while Path(f"/proc/{writer}").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        if Path(f"/proc/{writer}").exists():
            with contextlib.suppress(OSError):
                os.kill(writer, signal.SIGKILL)


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def descendants(pid: int) -> list[int]:
    """The processes below ``pid``: its children (the node's writer, delivery process, workers,
    spawner) and theirs."""
    found, queue = [], [pid]
    while queue:
        try:
            tasks = list(Path(f"/proc/{queue.pop()}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                children = [int(p) for p in (task / "children").read_text().split()]
            except OSError:
                continue
            found += children
            queue += children
    return found


def node_cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a node and its descendants (writer, delivery process,
    workers, spawner) so far."""
    return sum(cpu_seconds(p) for p in [pid, *descendants(pid)])


def child_running(node_pid: int, module: str) -> int | None:
    """The node's child process that runs ``module``: forked by its spawner (named as
    ``alarmhub.node.spawner.process_name`` says) or started by subprocess (``-m module``)."""
    name = spawner.process_name(module)
    for pid in descendants(node_pid):
        try:
            proc = Path(f"/proc/{pid}")
            if proc.joinpath("comm").read_text().strip() == name or (
                module.encode() in proc.joinpath("cmdline").read_bytes()
            ):
                return pid
        except OSError:
            continue
    return None


def writer_cpu_seconds(pid: int) -> float:
    """User plus system CPU time so far of a node's writer process (0 for a node without one):
    the rest of :func:`node_cpu_seconds` is the receiving side (the node, its workers)."""
    writer = writer_pid(pid)
    return 0.0 if writer is None else cpu_seconds(writer)


def machine_busy_seconds() -> tuple[float, float]:
    """CPU seconds the machine spent so far in processes (user, nice, system) and in interrupts
    (irq, softirq: loopback TCP shows up here), from /proc/stat."""
    try:
        values = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except OSError:
        return 0.0, 0.0
    return sum(values[0:3]) / CLOCK_TICKS, sum(values[5:7]) / CLOCK_TICKS


def writer_pid(node_pid: int) -> int | None:
    """The node's writer child process."""
    return child_running(node_pid, "alarmhub.store.writer_process")


def sleep_until(moment: float) -> None:
    delay = moment - time.monotonic()
    if delay > 0:
        time.sleep(delay)


def commit_metrics(port: int) -> dict[str, float]:
    """Sums and counts of the writer's commit histograms (differences give per-phase means)."""
    wanted = {
        "alarmhub_commit_seconds_sum",
        "alarmhub_commit_seconds_count",
        "alarmhub_commit_batch_size_sum",
        "alarmhub_commit_batch_size_count",
    }
    found: dict[str, float] = dict.fromkeys(wanted, 0.0)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            for line in r.read().decode().splitlines():
                name, _, value = line.partition(" ")
                if name in wanted:
                    found[name] = float(value)
    except OSError:
        pass
    return found


# one phase ------------------------------------------------------------------------------------


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list (inf when empty)."""
    if not sorted_values:
        return math.inf
    rank = max(1, math.ceil(q * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def spread(values: list[float]) -> dict[str, float]:
    values = sorted(values)
    return {
        "p50": percentile(values, 0.50),
        "p90": percentile(values, 0.90),
        "p99": percentile(values, 0.99),
        "max": values[-1] if values else math.inf,
    }


@dataclass
class PhaseResult:
    rate: int
    processes: int
    connections: int
    planned: int = 0
    sent: int = 0
    ok: int = 0
    non_200: int = 0
    no_answer: int = 0
    seen: int = 0
    unseen_ok: int = 0
    achieved_rate: float = 0.0
    latency_ms: dict[str, float] = field(default_factory=dict)  # unanswered/unseen: inf
    send_lag_ms: dict[str, float] = field(default_factory=dict)
    answer_ms: dict[str, float] = field(default_factory=dict)
    parts_ms: dict[str, dict[str, float]] = field(default_factory=dict)
    poll_cycle_ms: dict[str, float] = field(default_factory=dict)
    poll_query_ms: dict[str, float] = field(default_factory=dict)
    commit_mean_ms: float = 0.0
    commit_batch_mean: float = 0.0
    statuses: dict[str, int] = field(default_factory=dict)
    ready_margin_ms: float = 0.0
    cpu_percent: dict[str, float] = field(default_factory=dict)
    route_transactions: int = 0
    route_batch_mean: float = 0.0
    route_batch_max: int = 0
    timeline: list[dict[str, float]] = field(default_factory=list)


def run_phase(
    args: argparse.Namespace,
    db: Path,
    node_pid: int,
    port: int,
    token: str,
    rate: int,
    first: int,
    clock_offset: float,
) -> tuple[PhaseResult, int]:
    """Warm-up plus measured seconds at ``rate``; the result and the next free signal index."""
    ctx = mp.get_context("spawn")
    processes = args.processes or max(1, math.ceil(rate / args.rate_per_process))
    connections = max(1, args.connections // processes)
    seconds = args.warmup + args.duration
    count = int(rate * seconds)
    warm = int(rate * args.warmup)
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        after = int(conn.execute("SELECT coalesce(max(alarm_id), 0) FROM alarm").fetchone()[0])
    before = commit_metrics(port)

    t0 = time.monotonic() + 1.5  # time to start the processes and open connections
    send_deadline = t0 + seconds + args.answer_timeout
    poll_deadline = send_deadline + args.drain_timeout
    results_q: Any = ctx.Queue()
    poll_q: Any = ctx.Queue()
    stop = ctx.Event()
    seen_count: Synchronized[int] = ctx.Value("l", 0)  # type: ignore[assignment]
    poller = ctx.Process(
        target=poll_process,
        args=(str(db), after, args.poll_interval, stop, seen_count, poll_deadline, poll_q),
    )
    poller.start()
    loaders = []
    for worker in range(processes):
        share = Share(
            "127.0.0.1", port, token, args.accounts, first, count, float(rate), t0,
            worker, processes, connections, warm, send_deadline,
        )  # fmt: skip
        proc = ctx.Process(target=load_process, args=(share, results_q))
        proc.start()
        loaders.append(proc)

    writer = writer_pid(node_pid)
    sleep_until(t0 + args.warmup)
    node_cpu0 = cpu_seconds(node_pid), cpu_seconds(writer or 0), time.monotonic()
    machine0 = machine_busy_seconds()
    sleep_until(t0 + seconds)
    node_cpu1 = cpu_seconds(node_pid), cpu_seconds(writer or 0), time.monotonic()
    machine1 = machine_busy_seconds()

    outcomes = gather(loaders, results_q, send_deadline + 30)
    answers = [r for outcome in outcomes for r in outcome["results"]]
    enqueued_measured = sum(outcome["measured"] for outcome in outcomes)
    ok_total = sum(1 for r in answers if r[1] == 200)
    # let routing catch up: wait until every accepted signal was seen, within the drain time
    while seen_count.value < ok_total and time.monotonic() < poll_deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    stop.set()
    try:
        polled = poll_q.get(timeout=60)
    except Exception:
        polled = {"seen": [], "cycles": [], "queries": []}
        print("the poller gave no result in time", file=sys.stderr)
    poller.join(timeout=10)
    if poller.is_alive():
        poller.kill()
    after_metrics = commit_metrics(port)

    period = 1.0 / rate
    measured = [r for r in answers if r[0] - first >= warm]
    result = PhaseResult(rate=rate, processes=processes, connections=connections * processes)
    result.planned = count - warm
    result.sent = enqueued_measured  # handed to a connection, answered or not
    result.ok = sum(1 for r in measured if r[1] == 200)
    result.non_200 = sum(1 for r in measured if r[1] != 200)
    result.no_answer = enqueued_measured - len(measured)
    result.statuses = {}
    for r in measured:
        result.statuses[str(r[1])] = result.statuses.get(str(r[1]), 0) + 1
    sent_times = [r[2] for r in measured]
    if len(sent_times) > 1:
        result.achieved_rate = (len(sent_times) - 1) / (max(sent_times) - min(sent_times))
    planned = {r[0]: t0 + (r[0] - first) * period for r in measured}
    result.send_lag_ms = spread([(r[2] - planned[r[0]]) * 1000 for r in measured])
    result.answer_ms = spread([(r[3] - planned[r[0]]) * 1000 for r in measured if r[1] == 200])

    first_seen: dict[int, tuple[int, float]] = {}
    for alarm_id, panel, area, zone, when in polled["seen"]:
        first_seen.setdefault(index_of(panel, area, zone, args.accounts), (alarm_id, when))
    latencies: list[float] = []
    by_alarm: dict[int, int] = {}
    for r in measured:
        if r[1] != 200:
            continue
        hit = first_seen.get(r[0])
        if hit is None:
            result.unseen_ok += 1
            latencies.append(math.inf)  # accepted but never seen: counts as unbounded
            continue
        latencies.append((hit[1] - planned[r[0]]) * 1000)
        by_alarm[hit[0]] = r[0]
    # never answered, or never even sent before the deadline: never seen, unbounded latency
    latencies += [math.inf] * (result.no_answer + result.planned - result.sent)
    result.seen = len(by_alarm)
    result.ready_margin_ms = min((t0 - o["ready"]) * 1000 for o in outcomes) if outcomes else 0
    window = node_cpu1[2] - node_cpu0[2]
    result.cpu_percent = {
        "node (HTTP)": 100 * (node_cpu1[0] - node_cpu0[0]) / window,
        "writer process": 100 * (node_cpu1[1] - node_cpu0[1]) / window,
        "load processes": 100 * sum(o["cpu"] for o in outcomes),
        "poller": 100 * polled.get("cpu", 0.0),
    }
    ours = sum(result.cpu_percent.values())
    machine = 100 * (machine1[0] - machine0[0]) / window
    result.cpu_percent["interrupts"] = 100 * (machine1[1] - machine0[1]) / window
    result.cpu_percent["other processes"] = max(0.0, machine - ours)
    batches = route_batches(db, sorted(by_alarm))
    if batches:
        result.route_transactions = len(batches)
        result.route_batch_mean = sum(batches) / len(batches)
        result.route_batch_max = max(batches)
    result.timeline = timeline(measured, planned, first_seen, t0 + args.warmup, args.duration)
    result.latency_ms = spread(latencies)
    result.poll_cycle_ms = spread([c * 1000 for c in polled["cycles"][1:]])
    result.poll_query_ms = spread([q * 1000 for q in polled["queries"]])
    commits = (
        after_metrics["alarmhub_commit_seconds_count"] - before["alarmhub_commit_seconds_count"]
    )
    if commits > 0:
        result.commit_mean_ms = (
            1000
            * (after_metrics["alarmhub_commit_seconds_sum"] - before["alarmhub_commit_seconds_sum"])
            / commits
        )
        result.commit_batch_mean = (
            after_metrics["alarmhub_commit_batch_size_sum"]
            - before["alarmhub_commit_batch_size_sum"]
        ) / commits
    result.parts_ms = latency_parts(db, by_alarm, planned, first_seen, answers, clock_offset)
    return result, first + count


def timeline(
    measured: list[tuple[int, int, float, float]],
    planned: dict[int, float],
    first_seen: dict[int, tuple[int, float]],
    start: float,
    duration: float,
) -> list[dict[str, float]]:
    """Per second of the measured window: signals planned, median client send lag, p99 latency."""
    seconds = max(1, math.ceil(duration))
    lags: list[list[float]] = [[] for _ in range(seconds)]
    latencies: list[list[float]] = [[] for _ in range(seconds)]
    for index, status, sent, _ in measured:
        second = min(seconds - 1, max(0, int(planned[index] - start)))
        lags[second].append((sent - planned[index]) * 1000)
        hit = first_seen.get(index)
        if status == 200:
            latencies[second].append(math.inf if hit is None else (hit[1] - planned[index]) * 1000)
    return [
        {
            "second": n,
            "signals": len(lags[n]),
            "send_lag_p50_ms": percentile(sorted(lags[n]), 0.5),
            "latency_p99_ms": percentile(sorted(latencies[n]), 0.99),
        }
        for n in range(seconds)
    ]


def latency_parts(
    db: Path,
    by_alarm: dict[int, int],
    planned: dict[int, float],
    first_seen: dict[int, tuple[int, float]],
    answers: list[tuple[int, int, float, float]],
    clock_offset: float,
) -> dict[str, dict[str, float]]:
    """Where the time goes, from the alarm rows' received_us (the node's clock when the request
    arrived) and pending_us (the writer's clock when the routing transaction began)."""
    answered = {r[0]: r[3] for r in answers if r[1] == 200}
    parts: dict[str, list[float]] = {
        "planned -> received by node": [],
        "received -> 200 back at client": [],
        "received -> routing began": [],
        "routing began -> seen by poller": [],
    }
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        ids = sorted(by_alarm)
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            rows = conn.execute(
                f"SELECT alarm_id, received_us, pending_us FROM alarm "  # noqa: S608
                f"WHERE alarm_id IN ({','.join('?' * len(chunk))})",
                chunk,
            ).fetchall()
            for alarm_id, received_us, pending_us in rows:
                index = by_alarm[alarm_id]
                received = received_us / 1e6 - clock_offset
                routing = pending_us / 1e6 - clock_offset
                parts["planned -> received by node"].append((received - planned[index]) * 1000)
                if index in answered:
                    parts["received -> 200 back at client"].append(
                        (answered[index] - received) * 1000
                    )
                parts["received -> routing began"].append((routing - received) * 1000)
                parts["routing began -> seen by poller"].append(
                    (first_seen[index][1] - routing) * 1000
                )
    return {name: spread(values) for name, values in parts.items()}


def route_batches(db: Path, alarm_ids: list[int]) -> list[int]:
    """Alarms per routing transaction (alarms that share pending_us) among ``alarm_ids``."""
    if not alarm_ids:
        return []
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute(
            "SELECT count(*) FROM alarm WHERE alarm_id BETWEEN ? AND ? GROUP BY pending_us",
            (alarm_ids[0], alarm_ids[-1]),
        ).fetchall()
    return [int(r[0]) for r in rows]


def alarm_paths(db: Path) -> dict[str, int]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return dict(conn.execute("SELECT path, count(*) FROM alarm GROUP BY path").fetchall())


# report ---------------------------------------------------------------------------------------


def ms(value: float) -> str:
    return "never" if math.isinf(value) else f"{value:.1f}"


def show(result: PhaseResult) -> None:
    r = result
    lat = r.latency_ms
    print(f"\n== {r.rate:,} signals/s ({r.processes} load process(es), {r.connections} conns)")
    print(
        f"  signals planned {r.planned:,}   sent {r.sent:,}   200 {r.ok:,}   "
        f"non-200 {r.non_200:,}   no answer {r.no_answer:,}   alarms seen {r.seen:,}   "
        f"accepted but not seen {r.unseen_ok:,}"
    )
    print(
        f"  achieved send rate {r.achieved_rate:,.0f}/s; client send lag (planned -> written) "
        f"p50 {ms(r.send_lag_ms['p50'])} ms, p99 {ms(r.send_lag_ms['p99'])} ms, "
        f"max {ms(r.send_lag_ms['max'])} ms"
    )
    print(
        f"  posted -> pending alarm seen (ms; unanswered or unseen = never): p50 {ms(lat['p50'])}"
        f"  p90 {ms(lat['p90'])}  p99 {ms(lat['p99'])}  max {ms(lat['max'])}"
    )
    print(
        f"  posted -> 200 at the client (ms): p50 {ms(r.answer_ms['p50'])}  "
        f"p90 {ms(r.answer_ms['p90'])}  p99 {ms(r.answer_ms['p99'])}  max {ms(r.answer_ms['max'])}"
    )
    print("  where the time goes (ms)                 p50     p90     p99     max")
    for name, values in r.parts_ms.items():
        print(
            f"    {name:<36}" + "".join(f"{ms(values[k]):>8}" for k in ("p50", "p90", "p99", "max"))
        )
    print(
        "  per second: send lag p50 / latency p99 (ms): "
        + "  ".join(f"{ms(t['send_lag_p50_ms'])}/{ms(t['latency_p99_ms'])}" for t in r.timeline)
    )
    print(f"  load processes had their connections open {r.ready_margin_ms:.0f} ms before t0")
    print(
        f"  CPU, % of one core over the measured seconds ({os.cpu_count()} cores = "
        f"{100 * (os.cpu_count() or 1)}): "
        + ", ".join(f"{name} {value:.0f}" for name, value in r.cpu_percent.items())
    )
    print(
        f"  routing: {r.route_transactions:,} transactions for the measured alarms, "
        f"mean {r.route_batch_mean:.1f} and max {r.route_batch_max} alarms each"
    )
    print(
        f"  group commits: mean {r.commit_mean_ms:.2f} ms, mean batch {r.commit_batch_mean:.1f} "
        f"signals (node metrics)"
    )
    print(
        f"  poll cycle (ms): p50 {ms(r.poll_cycle_ms['p50'])}  p99 {ms(r.poll_cycle_ms['p99'])}  "
        f"max {ms(r.poll_cycle_ms['max'])}; poll query p50 {ms(r.poll_query_ms['p50'])}  "
        f"p99 {ms(r.poll_query_ms['p99'])}"
    )


def parse_rates(text: str) -> list[int]:
    try:
        rates = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError("rates are integers separated by commas") from None
    if not rates or min(rates) <= 0:
        raise argparse.ArgumentTypeError("give at least one positive rate")
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0] if __doc__ else None,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--rates", type=parse_rates, default=[1000, 5000], help="signals/s")
    parser.add_argument("--duration", type=float, default=12.0, help="measured seconds a rate")
    parser.add_argument("--warmup", type=float, default=3.0, help="unmeasured seconds first")
    parser.add_argument("--connections", type=int, default=256, help="keep-alive connections")
    parser.add_argument(
        "--processes", type=int, default=0, help="load processes (0: one per --rate-per-process)"
    )
    parser.add_argument(
        "--rate-per-process", type=int, default=3000, help="rate one load process is given"
    )
    parser.add_argument("--accounts", type=int, default=20_000, help="accounts signals spread over")
    parser.add_argument(
        "--runaway-limit", type=int, default=1_000_000, help="ALARMHUB_RUNAWAY_LIMIT for the node"
    )
    parser.add_argument("--poll-interval", type=float, default=0.001, help="seconds between polls")
    parser.add_argument(
        "--answer-timeout", type=float, default=15.0, help="seconds to wait for answers after"
    )
    parser.add_argument(
        "--drain-timeout", type=float, default=30.0, help="seconds to wait for routing after"
    )
    parser.add_argument("--keep", action="store_true", help="keep the data directory")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args()

    data_dir = Path(tempfile.mkdtemp(prefix="alarmhub-pending-"))
    db = data_dir / "alarmhub.db"
    started = time.monotonic()
    node: subprocess.Popen[bytes] | None = None
    results: list[PhaseResult] = []
    try:
        print(f"data dir {data_dir}; provisioning {args.accounts:,} accounts", flush=True)
        token, mask = provision(data_dir, args.accounts)
        port = free_port()
        node = start_node(data_dir, port, args.runaway_limit, data_dir / "node.log")
        print(
            f"node on 127.0.0.1:{port} with ALARMHUB_RUNAWAY_LIMIT={args.runaway_limit} "
            f"(runaway suppression would otherwise, correctly, keep accounts sending more than "
            f"10 signals in 2 minutes out of the pending queue); dnis {DNIS} mask {mask}; "
            f"codes {'/'.join(CODES)}; {os.cpu_count()} cores",
            flush=True,
        )
        clock_offset = time.time() - time.monotonic()
        first = 0
        for rate in args.rates:
            print(
                f"running {rate:,}/s: {args.warmup:g} s warm-up + {args.duration:g} s measured",
                flush=True,
            )
            result, first = run_phase(args, db, node.pid, port, token, rate, first, clock_offset)
            results.append(result)
            show(result)
            time.sleep(1.0)
        paths = alarm_paths(db)
    finally:
        if node is not None:
            stop_node(node)
        if args.keep:
            print(f"kept {data_dir}")
        else:
            shutil.rmtree(data_dir, ignore_errors=True)

    print(f"\nalarm rows by path: {paths} (all should be PENDING: no UNKNOWN, no RUNAWAY)")
    print(
        f"poll bias: an alarm is stamped when the poll that returns it ends, so every latency "
        f"includes part of a poll cycle (interval {args.poll_interval * 1000:g} ms plus the "
        f"query): on average about half a cycle, at most one cycle (see 'poll cycle' above)"
    )
    for result in results:
        p99 = result.latency_ms["p99"]
        verdict = ""
        if result.rate == TARGET_RATE:
            complete = result.sent == result.planned == result.ok == result.seen
            met = p99 < TARGET_P99_MS and complete
            verdict = f"   target p99 < {TARGET_P99_MS:g} ms: {'met' if met else 'NOT met'}"
        print(
            f"{result.rate:>6,}/s: p50 {ms(result.latency_ms['p50'])} ms, "
            f"p99 {ms(p99)} ms, achieved {result.achieved_rate:,.0f}/s{verdict}"
        )
        other = result.cpu_percent.get("other processes", 0.0)
        if other > QUIET_PERCENT:
            print(
                f"  WARNING: other processes used {other:.0f} % of a core during the "
                f"{result.rate:,}/s measurement; the machine was not quiet"
            )
    print(f"total run time {time.monotonic() - started:.0f} s")
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=2))


if __name__ == "__main__":
    main()
