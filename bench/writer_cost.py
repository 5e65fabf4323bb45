"""CPU of the writer process alone per signal of a mix: the part of a durable signal's cost that
the node's HTTP or DC-09 front end does not pay, measured without either.

Starts the real writer process (``python -m alarmhub.store.writer_process``) of a checkout on a
new SQLite data directory provisioned as the signaling benchmarks' (the realistic mix's dnis,
line mask and accounts), hands it the signals of a mix as the node would (frames of
``--frame`` signals, at most ``--window`` frames unanswered), waits until every signal is
routed, and reports the writer's CPU from /proc divided by the signals: in all, and as many
rounds as asked, alternating between checkouts when two are given (an A/B on the same frames).
The figure moves with the machine's speed, but far less with its noise than a run through HTTP.

    .venv/bin/python bench/writer_cost.py [--signals 50000] [--rounds 3] [CHECKOUT [CHECKOUT]]

``--without-account-index`` is an experiment, not a configuration the product has: each round
also runs the first checkout on a database of its own from which the history index by account
(``ix_history_account_time``) was dropped, which shows what that index's random page a signal
costs the writer (account history queries would read the whole table without it).
``--page-size N`` (repeatable) is another: each round also runs the first checkout on a
database rebuilt (``VACUUM``) with SQLite pages of N bytes instead of the default 4,096.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import mix
from pending_latency import cpu_seconds
from run import provision

HERE = Path(__file__).resolve().parent
RUNAWAY_LIMIT = 1_000_000
DC09_RETRY_SECONDS = 300


def _frame(rows: list[list[Any]]) -> bytes:
    body = json.dumps(rows, separators=(",", ":")).encode()
    return len(body).to_bytes(4, "big") + body


def _read_message(sock: socket.socket, buffer: bytearray) -> Any:
    while True:
        if len(buffer) >= 4:
            size = int.from_bytes(buffer[:4], "big")
            if len(buffer) >= 4 + size:
                message = json.loads(bytes(buffer[4 : 4 + size]))
                del buffer[: 4 + size]
                return message
        data = sock.recv(1 << 20)
        if not data:
            raise SystemExit("the writer process closed its socket")
        buffer += data


def rows_of(signals: list[mix.Signal], start_us: int, keyed: bool, round_: int) -> list[list[Any]]:
    """The signals in the writer's wire form (``commit.to_wire``); ``keyed``: each with a DC-09
    retry key, as the DC-09 receiver gives them, new in each round (a key of an earlier round
    would be a retransmission, answered and not stored)."""
    token = "dc09" if keyed else "bench"
    rows = []
    for i, s in enumerate(signals):
        key = f"{s.panel}:{round_}:{i}" if keyed else None
        rows.append(["bench", "bench", mix.DNIS, s.panel, s.code, s.area, s.zone, token,
                     start_us + i, key])  # fmt: skip
    return rows


UNROUTED = (
    "SELECT count(*) FROM signal"
    " WHERE incident_number > (SELECT value FROM sequence WHERE name = 'routed')"
)
UNROUTED_BEFORE_0015 = "SELECT count(*) FROM signal WHERE routed_us IS NULL"


def unrouted(db: Path) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        try:
            return int(conn.execute(UNROUTED).fetchone()[0])
        except sqlite3.OperationalError:  # a checkout from before the watermark
            return int(conn.execute(UNROUTED_BEFORE_0015).fetchone()[0])


def run_once(
    checkout: Path, data_dir: Path, rows: list[list[Any]], frame: int, window: int
) -> dict[str, float]:
    ours, theirs = socket.socketpair()
    env = {**os.environ, "PYTHONPATH": str(checkout / "src")}
    writer = subprocess.Popen(
        [sys.executable, "-m", "alarmhub.store.writer_process", str(theirs.fileno())],
        pass_fds=[theirs.fileno()], env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    theirs.close()
    config = {
        "url": f"sqlite:///{data_dir / 'alarmhub.db'}",
        "max_batch": 1000,
        "idempotency_hours": 24,
        "key_windows": {"dc09": DC09_RETRY_SECONDS},
        "runaway_limit": RUNAWAY_LIMIT,
        "runaway_minutes": 10,
        "test_grace_minutes": 60,
        "timezone": "UTC",
        "log_level": "warning",
        "log_format": "keyvalue",
        "leader": True,
    }
    buffer = bytearray()
    ours.sendall(_frame(config))  # type: ignore[arg-type]
    assert _read_message(ours, buffer) == {"ready": True}
    frames = [rows[i : i + frame] for i in range(0, len(rows), frame)]
    cpu0, wall0 = cpu_seconds(writer.pid), time.perf_counter()
    sent = answered = 0
    while answered < len(frames):
        while sent < len(frames) and sent - answered < window:
            ours.sendall(_frame(frames[sent]))
            sent += 1
        reply = _read_message(ours, buffer)
        answered += reply["frames"]
    answered_s = time.perf_counter() - wall0
    db = data_dir / "alarmhub.db"
    while unrouted(db):
        time.sleep(0.05)
    cpu = cpu_seconds(writer.pid) - cpu0
    ours.close()
    writer.wait(timeout=60)
    return {"cpu_us": cpu / len(rows) * 1e6, "answered_rate": len(rows) / answered_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkouts", nargs="*", type=Path, default=[HERE.parent])
    parser.add_argument("--signals", type=int, default=50_000)
    parser.add_argument("--accounts", type=int, default=mix.ACCOUNTS)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--frame", type=int, default=32, help="signals a frame")
    parser.add_argument("--window", type=int, default=8, help="frames unanswered at most")
    parser.add_argument("--mix", choices=("realistic", "unknown"), default="realistic")
    parser.add_argument("--dc09", action="store_true", help="with DC-09 retry keys")
    parser.add_argument(
        "--without-account-index",
        action="store_true",
        help="also the first checkout without the history index by account (an experiment)",
    )
    parser.add_argument(
        "--page-size",
        type=int,
        action="append",
        default=[],
        help="also the first checkout on a database with pages of this size (an experiment)",
    )
    args = parser.parse_args()
    if args.mix == "realistic":
        signals = mix.realistic(args.signals, args.accounts)
    else:
        signals = [
            mix.Signal("unknown account", mix.panel_id(mix.UNKNOWN_PANEL + i % 1000), "E130",
                       "01", "001")
            for i in range(args.signals)
        ]  # fmt: skip
    runs = {str(c): (c, provision(c, args.accounts)[0]) for c in args.checkouts}

    def experiment(name: str, *statements: str) -> None:
        """The first checkout also on a database of its own, altered by ``statements``."""
        checkout = args.checkouts[0]
        data_dir = provision(checkout, args.accounts)[0]
        db = sqlite3.connect(data_dir / "alarmhub.db", isolation_level=None)
        for statement in statements:
            db.execute(statement)
        db.close()
        runs[f"{checkout} {name}"] = (checkout, data_dir)

    if args.without_account_index:
        experiment("without the history index by account", "DROP INDEX ix_history_account_time")
    for size in args.page_size:  # a WAL database keeps its page size: out of WAL, then back
        experiment(
            f"with pages of {size} bytes",
            "PRAGMA journal_mode=DELETE", f"PRAGMA page_size={size}", "VACUUM",
            "PRAGMA journal_mode=WAL",
        )  # fmt: skip
    results: dict[str, list[dict[str, float]]] = {name: [] for name in runs}
    base = int(time.time() * 1e6)
    for round_ in range(args.rounds):
        for name, (checkout, data_dir) in runs.items():
            start = base + round_ * args.signals * 10
            rows = rows_of(signals, start, args.dc09, round_)
            r = run_once(checkout, data_dir, rows, args.frame, args.window)
            results[name].append(r)
            print(f"round {round_ + 1} {name}: {r['cpu_us']:.1f} µs CPU a signal, "
                  f"answered {r['answered_rate']:,.0f}/s", flush=True)  # fmt: skip
    for name, rs in results.items():
        cpu = statistics.median(r["cpu_us"] for r in rs)
        print(f"{name}: writer CPU a signal, median of {len(rs)}: {cpu:.1f} µs")


if __name__ == "__main__":
    main()
