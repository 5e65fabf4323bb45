#!/usr/bin/env python3
"""Webhook delivery: events of 1,000 signals/s delivered to a local receiver, and the signal
path with the receiver answering and hanging.

What is measured: (1) for every event delivered, the time from its commit (``event.at_us``) to
its arrival at the receiver (p50, p99); (2) the signal path's latency (``POST /rx``, planned send
to ``200``) and the CPU of node and writer a signal, with no webhook yet, then while the receiver
answers, then while it hangs (every request held until the attempt's 10 s run out). Both clocks
are this machine's wall clock.

How: a fresh SQLite data directory provisioned like ``pending_latency.py`` (whose load
generator this uses, open loop at ``--rate``), a node (``alarmhub serve``), a webhook on every
event kind to a receiver of its own process (raw asyncio HTTP/1.1, keep-alive, answering 204 or
never). Events come from the signals (each raises an alarm, so an ``alarm.raised`` event) when
the node writes them; when it does not (``--events side``, or ``auto`` finding no event after a
probe), a side process publishes events at the same rate through ``store.events.publish``.

    .venv/bin/python bench/webhook_delivery.py [--rate 1000] [--duration 20] [--hang-duration 10]

``--backlogs N`` measures instead the delivery process's CPU (a share of one core) while N
webhooks each hold a backlog of ``--backlog`` deliveries of one account whose receiver fails
(nothing listens on its port), between retries: what the worker costs for deliveries that wait.

    .venv/bin/python bench/webhook_delivery.py --backlogs 3 [--backlog 10000] [--duration 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import multiprocessing as mp
import shutil
import signal
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

from pending_latency import (
    ALLOW_PRIVATE,
    Share,
    alarmhub,
    child_running,
    cpu_seconds,
    free_port,
    header,
    load_process,
    node_cpu_seconds,
    percentile,
    provision,
    read_message,
    serve_until,
    start_node,
    stop_node,
)

TARGET_P99_S = 1.0
WARM_UP_S = 3.0


# receiver ------------------------------------------------------------------------------------


def receiver_process(port: int, hang: Any, stop: Any, out: Any) -> None:
    """Answer 204 (or, while ``hang`` is set, nothing) to every POST; put [(webhook-id, time)]."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    received: list[tuple[str, float]] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head, _ = await read_message(reader)
                at = time.time()
                webhook_id = (header(head, b"webhook-id") or b"").decode()
                if hang.value:
                    await asyncio.sleep(3600)
                received.append((webhook_id, at))
                writer.write(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        except asyncio.CancelledError:  # the receiver stops while it holds a request
            return
        finally:
            writer.close()

    serve_until(handle, port, stop)
    out.put(received)


# events published beside the node (while the node writes none itself) -----------------------


def publisher_process(url: str, rate: float, accounts: int, stop: Any) -> None:
    """Publish ``rate`` alarm events a second, in a transaction every 10 ms."""
    from alarmhub.clock import now_us
    from alarmhub.core.events import ALARM_RAISED
    from alarmhub.store import events, operations
    from alarmhub.store.commit import lock_incidents
    from alarmhub.store.engine import open_engine

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    engine = open_engine(url)
    n = 0
    t0 = time.monotonic()
    while not stop.is_set():
        due = int((time.monotonic() - t0) * rate)

        def work(conn: Any, first: int = n, last: int = due) -> None:
            lock_incidents(conn)
            for i in range(first, last):
                account = f"7{i % accounts + 1:05d}"
                data = {"account": account, "incident_number": i, "alarm_id": i, "type": "BURG",
                        "hist_text": "BURGLARY", "priority": "2"}  # fmt: skip
                events.publish(conn, ALARM_RAISED, account, data, now_us())

        if due > n:
            operations.run(engine, work)
            n = due
        time.sleep(0.01)
    engine.dispose()


# waiting backlogs ----------------------------------------------------------------------------


def publish_backlog(db: Path, account: str, count: int) -> None:
    """``count`` alarm events of ``account``, in one transaction."""
    from alarmhub.clock import now_us
    from alarmhub.core.events import ALARM_RAISED
    from alarmhub.store import events, operations
    from alarmhub.store.commit import lock_incidents
    from alarmhub.store.engine import open_engine

    engine = open_engine(f"sqlite:///{db}")

    def work(conn: Any) -> None:
        lock_incidents(conn)
        data = {"account": account, "type": "BURG", "priority": "2"}
        events.publish_rows(conn, [events.row(ALARM_RAISED, account, data, now_us())] * count)

    operations.run(engine, work)
    engine.dispose()


def delivery_process_pid(node_pid: int) -> int | None:
    return child_running(node_pid, "alarmhub.outbound.delivery_process")


def backlog_cpu(backlogs: int, backlog: int, seconds: float) -> None:
    """The delivery process's CPU while ``backlogs`` webhooks' deliveries wait for a retry."""
    data_dir = Path(tempfile.mkdtemp(prefix="alarmhub-webhooks-"))
    node = None
    try:
        provision(data_dir, 10)
        node = start_node(
            data_dir, free_port(), 1_000_000, data_dir / "node.log", env=ALLOW_PRIVATE
        )
        nowhere = f"http://127.0.0.1:{free_port()}/hook"  # refused: every attempt fails
        for _ in range(backlogs):
            alarmhub(
                data_dir, "webhook", "add", nowhere, "--event", "alarm.raised", env=ALLOW_PRIVATE
            )
        publish_backlog(data_dir / "alarmhub.db", "700001", backlog)
        time.sleep(15.0)  # the process started, the first two attempts made (2 s, 8 s later)
        pid = delivery_process_pid(node.pid)
        assert pid is not None, "no delivery process"
        before = cpu_seconds(pid)
        time.sleep(seconds)  # the next retry is a minute after the second failure
        share = (cpu_seconds(pid) - before) / seconds
    finally:
        if node is not None:
            stop_node(node)
        shutil.rmtree(data_dir, ignore_errors=True)
    print(json.dumps({"backlogs": backlogs, "backlog": backlog, "seconds": seconds,
                      "webhook_process_core_share": round(share, 4)}))  # fmt: skip


# phases --------------------------------------------------------------------------------------


def load(port: int, token: str, accounts: int, first: int, rate: float, seconds: float) -> Any:
    """Signals ``first``.. at ``rate`` for ``seconds``: [(index, status, sent, answered)]."""
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    t0 = time.monotonic() + 1.0
    share = Share("127.0.0.1", port, token, accounts, first, int(rate * seconds), rate, t0,
                  0, 1, 64, 0, t0 + seconds + 15)  # fmt: skip
    proc = ctx.Process(target=load_process, args=(share, out))
    proc.start()
    outcome = out.get(timeout=seconds + 60)
    proc.join(timeout=10)
    return outcome["results"]


def answer_ms(results: list[tuple[int, int, float, float]]) -> dict[str, float]:
    ok = sorted((answered - sent) * 1000 for _, status, sent, answered in results if status == 200)
    return {"count": len(ok), "failed": len(results) - len(ok), "p50": percentile(ok, 0.5),
            "p99": percentile(ok, 0.99), "max": ok[-1] if ok else math.inf}  # fmt: skip


def event_count(db: Path) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return int(conn.execute("SELECT count(*) FROM event").fetchone()[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rate", type=float, default=1000.0, help="signals (and events) a second")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of delivery")
    parser.add_argument("--hang-duration", type=float, default=10.0, help="seconds, hanging")
    parser.add_argument("--accounts", type=int, default=2000)
    parser.add_argument("--events", choices=("auto", "signals", "side"), default="auto")
    parser.add_argument("--keep", action="store_true", help="keep the data directory")
    parser.add_argument("--backlogs", type=int, default=0, help="webhooks with a failing backlog")
    parser.add_argument("--backlog", type=int, default=10_000, help="deliveries in each")
    args = parser.parse_args()
    if args.backlogs:
        backlog_cpu(args.backlogs, args.backlog, args.duration)
        return

    ctx = mp.get_context("spawn")
    data_dir = Path(tempfile.mkdtemp(prefix="alarmhub-webhooks-"))
    db = data_dir / "alarmhub.db"
    node = None
    hang, stop_receiver, receipts = ctx.Value("b", 0), ctx.Event(), ctx.Queue()
    receiver_port = free_port()
    receiver = ctx.Process(target=receiver_process,
                           args=(receiver_port, hang, stop_receiver, receipts))  # fmt: skip
    receiver.start()
    side_stop = ctx.Event()
    side = None
    try:
        token, _ = provision(data_dir, args.accounts)
        port = free_port()
        node = start_node(data_dir, port, 1_000_000, data_dir / "node.log", env=ALLOW_PRIVATE)
        kinds = ("alarm.raised", "alarm.taken", "alarm.resolved", "alarm.restored",
                 "account.test_started", "account.test_ended", "supervision.failed",
                 "supervision.restored")  # fmt: skip
        options = [a for kind in kinds for a in ("--event", kind)]
        load(port, token, args.accounts, 0, args.rate, WARM_UP_S)  # caches, connections
        first = int(args.rate * WARM_UP_S)
        cpu = [node_cpu_seconds(node.pid)]
        baseline = load(port, token, args.accounts, first, args.rate, args.hang_duration)
        cpu.append(node_cpu_seconds(node.pid))
        first += int(args.rate * args.hang_duration)
        mode = args.events
        if mode == "auto":
            mode = "signals" if event_count(db) else "side"
        target = f"http://127.0.0.1:{receiver_port}/hook"  # on this machine: a private target
        alarmhub(data_dir, "webhook", "add", target, *options,
                 env=ALLOW_PRIVATE)  # fmt: skip
        print(f"data dir {data_dir}; node on {port}; events from: {mode}", flush=True)
        if mode == "side":
            side_args = (f"sqlite:///{db}", args.rate, args.accounts, side_stop)
            side = ctx.Process(target=publisher_process, args=side_args)
            side.start()
        cpu.append(node_cpu_seconds(node.pid))
        calm = load(port, token, args.accounts, first, args.rate, args.duration)
        cpu.append(node_cpu_seconds(node.pid))
        first += int(args.rate * args.duration)
        hang.value = 1
        time.sleep(2.0)  # the worker's slots fill with requests that hang
        cpu.append(node_cpu_seconds(node.pid))
        hanging = load(port, token, args.accounts, first, args.rate, args.hang_duration)
        cpu.append(node_cpu_seconds(node.pid))
        side_stop.set()
        if side is not None:
            side.join(timeout=30)
        stop_receiver.set()
        received = receipts.get(timeout=60)
        receiver.join(timeout=10)
    finally:
        side_stop.set()
        stop_receiver.set()
        if node is not None:
            stop_node(node)
        if receiver.is_alive():
            receiver.kill()

    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        at = dict(conn.execute("SELECT e.event_id, e.at_us FROM event e JOIN webhook_delivery d"
                               " ON d.event_id = e.event_id").fetchall())  # fmt: skip
        states = dict(conn.execute(
            "SELECT state, count(*) FROM webhook_delivery GROUP BY state").fetchall())  # fmt: skip
    first_receipt: dict[int, float] = {}
    for webhook_id, when in received:
        event_id = int(webhook_id.removeprefix("evt_"))
        first_receipt.setdefault(event_id, when)
    delays = sorted(when - at[e] / 1e6 for e, when in first_receipt.items())
    p50, p99 = percentile(delays, 0.5), percentile(delays, 0.99)
    result = {
        "events_from": mode, "events": len(at), "delivered": len(first_receipt),
        "deliveries_by_state": states, "commit_to_receipt_s": {"p50": p50, "p99": p99,
        "max": delays[-1] if delays else math.inf},
        "signal_ms_no_webhook": answer_ms(baseline),
        "signal_ms_receiver_answering": answer_ms(calm),
        "signal_ms_receiver_hanging": answer_ms(hanging),
        "cpu_us_per_signal_node_and_writer": {
            "no_webhook": (cpu[1] - cpu[0]) / len(baseline) * 1e6,
            "receiver_answering": (cpu[3] - cpu[2]) / len(calm) * 1e6,
            "receiver_hanging": (cpu[5] - cpu[4]) / len(hanging) * 1e6,
        },
    }  # fmt: skip
    print(json.dumps(result, indent=2))
    verdict = "met" if p99 < TARGET_P99_S else "NOT met"
    print(f"commit -> receipt: p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms "
          f"(target p99 < {TARGET_P99_S:g} s: {verdict})")  # fmt: skip
    if args.keep:
        print(f"kept {data_dir}")
    else:
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
