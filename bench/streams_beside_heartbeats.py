#!/usr/bin/env python3
"""Heartbeats beside 1,000 open event streams and a webhook backlog of one failing account,
against the same node without them.

What is measured: the latency of ``GET /rx/PAIR/hb`` (planned send to ``200``, p50 and p99) at
a paced rate over a few kept-alive connections, and the CPU of the node (workers, writer,
webhook process) a second, in rounds that alternate between two arms:

- *plain*: a node with the same accounts and outbox (``--backlog`` alarm events of one
  account), no webhook, no stream;
- *beside*: the same, plus a webhook on ``alarm.raised`` whose receiver answers ``500`` for
  that account (``204`` for the others), so that every one of its deliveries waits for a retry
  (the backlog), and ``--streams`` idle event streams open (``GET /api/v1/events``, from one
  process, all answered ``200`` before the round starts).

How: two fresh SQLite data directories provisioned like ``pending_latency.py``; the backlog is
made through the public paths only (the webhook added, then one signal each for the account's
``--backlog`` zones, each an ``alarm.raised``), so the script works with any webhook worker.
One node runs at a time (both arms on the node's default workers); each round starts its arm's
node, opens the streams (beside), waits ``--settle`` seconds, sends heartbeats for
``--seconds``, and stops the node.

    .venv/bin/python bench/streams_beside_heartbeats.py [--rounds 3] [--seconds 15]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import shutil
import signal
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from pending_latency import (
    ALLOW_PRIVATE,
    DRIVER,
    Share,
    alarmhub,
    free_port,
    load_process,
    node_cpu_seconds,
    percentile,
    provision,
    read_message,
    serve_until,
    start_node,
    stop_node,
)

TARGET_RATIO = 1.5
FAILING = "700001"  # the account whose deliveries fail: panel 1 of provision's accounts
PAIR = "bench-site:rx1"


# the webhook's receiver ----------------------------------------------------------------------


def receiver_process(port: int, stop: Any) -> None:
    """Answer 500 to every delivery of the failing account, 204 to the others."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    failing = f'"account":"{FAILING}"'.encode()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                _, body = await read_message(reader)
                status = b"500 Internal Server Error" if failing in body else b"204 No Content"
                writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Length: 0\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    serve_until(handle, port, stop)


# the event streams ---------------------------------------------------------------------------


def streams_process(port: int, key: str, count: int, opened: Any, stop: Any) -> None:
    """Hold ``count`` event streams open, reading and dropping what comes; put how many were
    answered 200 on ``opened`` once all have answered."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    request = (
        f"GET /api/v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
        "Accept: text/event-stream\r\n\r\n"
    ).encode()

    async def one() -> tuple[bool, asyncio.StreamReader | None, asyncio.StreamWriter | None]:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(request)
        head = await reader.readuntil(b"\r\n\r\n")
        return head.startswith(b"HTTP/1.1 200"), reader, writer

    async def drain(reader: asyncio.StreamReader) -> None:
        while await reader.read(65536):
            pass

    async def main() -> None:
        results = []
        for start in range(0, count, 50):  # 50 at a time: the accept queue stays short
            results += await asyncio.gather(*(one() for _ in range(start, min(count, start + 50))))
        opened.put(sum(ok for ok, _, _ in results))
        drains = [asyncio.ensure_future(drain(r)) for _, r, _ in results if r is not None]
        while not stop.is_set():
            await asyncio.sleep(0.1)
        for task in drains:
            task.cancel()
        for _, _, writer in results:
            if writer is not None:
                writer.close()

    asyncio.run(main())


# heartbeats ----------------------------------------------------------------------------------


async def heartbeats(port: int, token: str, rate: float, seconds: float, connections: int) -> Any:
    """``rate`` heartbeats a second for ``seconds`` over ``connections`` kept-alive connections:
    the latencies (s) of those answered 200, and how many were not."""
    request = (
        f"GET /rx/{PAIR}/hb HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\r\n"
    ).encode()
    latencies: list[float] = []
    failed = 0
    count = int(rate * seconds)
    t0 = time.monotonic() + 0.5

    async def connection(n: int) -> None:
        nonlocal failed
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for i in range(n, count, connections):
            due = t0 + i / rate
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            writer.write(request)
            head, _ = await read_message(reader)
            if head.startswith(b"HTTP/1.1 200"):
                latencies.append(time.monotonic() - due)
            else:
                failed += 1
        writer.close()

    await asyncio.gather(*(connection(n) for n in range(connections)))
    return sorted(latencies), failed


# set-up --------------------------------------------------------------------------------------


def make_station(data_dir: Path, accounts: int, backlog: int, webhook_port: int | None) -> Any:
    """A provisioned data directory with ``backlog`` alarm events of the failing account (and
    the webhook first, when ``webhook_port``): the signals' token, a token that may beat for
    PAIR and an events:read key."""
    token, _ = provision(data_dir, accounts)
    beats = json.loads(alarmhub(data_dir, "token", "create", "--name", "beats", "--driver",
                                DRIVER, "--heartbeat", PAIR, "--json"))["token"]  # fmt: skip
    key = json.loads(alarmhub(data_dir, "apikey", "create", "--name", "streams",
                              "--scope", "events:read", "--json"))["key"]  # fmt: skip
    if webhook_port is not None:
        alarmhub(data_dir, "webhook", "add", f"http://127.0.0.1:{webhook_port}/hook",
                 "--event", "alarm.raised", env=ALLOW_PRIVATE)  # fmt: skip
    port = free_port()
    node = start_node(data_dir, port, 1_000_000, data_dir / "setup.log", env=ALLOW_PRIVATE)
    try:
        ctx = mp.get_context("spawn")
        out = ctx.Queue()
        rate = 1000.0
        t0 = time.monotonic() + 1.0
        share = Share("127.0.0.1", port, token, 1, 0, backlog, rate, t0, 0, 1, 16, 0,
                      t0 + backlog / rate + 60)  # fmt: skip
        proc = ctx.Process(target=load_process, args=(share, out))
        proc.start()
        results = out.get(timeout=backlog / rate + 120)["results"]
        proc.join(timeout=10)
        refused = sum(1 for _, status, _, _ in results if status != 200)
        if refused:
            raise SystemExit(f"{refused} of the backlog's signals were refused")
        db = data_dir / "alarmhub.db"
        deadline = time.monotonic() + 120
        while count(db, "SELECT count(*) FROM event") < backlog:
            if time.monotonic() > deadline:
                raise SystemExit("the backlog's events were not written within 120 s")
            time.sleep(0.5)
        if webhook_port is not None:
            time.sleep(10)  # the first attempt of each delivery, refused: the backlog waits
    finally:
        stop_node(node)
    return beats, key


def count(db: Path, sql: str) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return int(conn.execute(sql).fetchone()[0])


def round_of(arm: str, data_dir: Path, station: Any, args: argparse.Namespace) -> dict[str, Any]:
    token, key = station
    port = free_port()
    node = start_node(data_dir, port, 1_000_000, data_dir / f"node-{arm}.log", env=ALLOW_PRIVATE)
    ctx = mp.get_context("spawn")
    stop, opened = ctx.Event(), ctx.Queue()
    holder = None
    try:
        if arm == "beside":
            holder = ctx.Process(target=streams_process,
                                 args=(port, key, args.streams, opened, stop))  # fmt: skip
            holder.start()
            answered = opened.get(timeout=120)
            if answered != args.streams:
                raise SystemExit(f"{answered} of {args.streams} streams were answered 200")
        time.sleep(args.settle)
        cpu0, t0 = node_cpu_seconds(node.pid), time.monotonic()
        latencies, failed = asyncio.run(
            heartbeats(port, token, args.rate, args.seconds, args.connections)
        )
        cpu = (node_cpu_seconds(node.pid) - cpu0) / (time.monotonic() - t0)
    finally:
        stop.set()
        if holder is not None:
            holder.join(timeout=30)
        stop_node(node)
    return {
        "arm": arm,
        "heartbeats": len(latencies),
        "failed": failed,
        "p50_ms": percentile(latencies, 0.5) * 1000,
        "p99_ms": percentile(latencies, 0.99) * 1000,
        "node_cpu_per_s": cpu,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--streams", type=int, default=1000, help="event streams held open")
    parser.add_argument("--backlog", type=int, default=10_000, help="events of the account")
    parser.add_argument("--accounts", type=int, default=100)
    parser.add_argument("--rate", type=float, default=200.0, help="heartbeats a second")
    parser.add_argument("--connections", type=int, default=8, help="heartbeat connections")
    parser.add_argument("--seconds", type=float, default=15.0, help="heartbeats a round")
    parser.add_argument("--settle", type=float, default=5.0, help="seconds before a round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each arm")
    parser.add_argument("--keep", action="store_true", help="keep the data directories")
    args = parser.parse_args()
    # the bench's streams all come from one address with one key: the caps out of the way
    os.environ["ALARMHUB_STREAM_MAX_PER_KEY"] = str(args.streams)
    os.environ["ALARMHUB_STREAM_MAX_PER_ADDRESS"] = str(args.streams)

    ctx = mp.get_context("spawn")
    root = Path(tempfile.mkdtemp(prefix="alarmhub-streams-"))
    stop_receiver = ctx.Event()
    receiver_port = free_port()
    receiver = ctx.Process(target=receiver_process, args=(receiver_port, stop_receiver))
    receiver.start()
    rounds: list[dict[str, Any]] = []
    try:
        dirs = {"plain": root / "plain", "beside": root / "beside"}
        stations = {
            "plain": make_station(dirs["plain"], args.accounts, args.backlog, None),
            "beside": make_station(dirs["beside"], args.accounts, args.backlog, receiver_port),
        }
        for n in range(args.rounds):
            for arm in ("plain", "beside") if n % 2 == 0 else ("beside", "plain"):
                outcome = round_of(arm, dirs[arm], stations[arm], args)
                rounds.append(outcome)
                print(json.dumps(outcome), flush=True)
        waiting = "SELECT count(*) FROM webhook_delivery WHERE state != 'delivered'"
        pending = count(dirs["beside"] / "alarmhub.db", waiting)
    finally:
        stop_receiver.set()
        receiver.join(timeout=10)
        if receiver.is_alive():
            receiver.kill()

    def median(arm: str, name: str) -> float:
        return float(statistics.median(r[name] for r in rounds if r["arm"] == arm))

    plain, beside = median("plain", "p99_ms"), median("beside", "p99_ms")
    ratio = beside / plain
    verdict = "met" if ratio <= TARGET_RATIO else "NOT met"
    print(json.dumps({"deliveries_not_delivered_at_end": pending, "p99_ratio": ratio}))
    print(f"heartbeat p99, median of the rounds: plain {plain:.1f} ms, beside {args.streams} "
          f"streams and a backlog of {args.backlog}: {beside:.1f} ms: {ratio:.2f}x "
          f"(target <= {TARGET_RATIO}x: {verdict})")  # fmt: skip
    cpu = {arm: median(arm, "node_cpu_per_s") for arm in ("plain", "beside")}
    print(f"node CPU a second: plain {cpu['plain']:.3f}, beside {cpu['beside']:.3f}")
    if args.keep:
        print(f"kept {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
