#!/usr/bin/env python3
"""History query latency: the newest 100 events of one account in a one-day window, 10M events.

What is measured: the product's own query, ``alarmhub.store.queries.account_history(conn,
account, start_us, stop_us, limit=100)``, through an engine from
``alarmhub.store.engine.open_engine`` (WAL, the node's connection settings) on a database whose
``history`` table holds ``--events`` rows, for random accounts and random one-day windows inside
the data. Each timed query is what a request handler does: take a pooled connection, run the
query (its own read transaction), turn the rows into dicts, give the connection back.

How the database is built: a fresh data directory gets the schema from ``alarmhub db upgrade``;
then the rows are bulk-inserted with the ``sqlite3`` module in big transactions, oldest first
(event ids grow with time, as in a live system, so one account's events are spread over the
whole table). ``PRAGMA synchronous=OFF`` and ``journal_mode=OFF`` are used for this bulk load
only, and the two history indexes are dropped during the load and re-created afterwards from
their own definitions in the schema (``--incremental-index`` keeps them during the load
instead); then ``ANALYZE``, and the database goes back to WAL. Every event is what the router
writes for a signal (its text, type, priority and path come from the real router and alarm
types); accounts are skewed: by default 1 % of the accounts send 30 % of the events.

    .venv/bin/python bench/history_query.py [--events 10000000] [--queries 2000] [--keep]
    .venv/bin/python bench/history_query.py --events 200000      # a quick try first
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from alarmhub.core.alarm_types import DEFAULTS, AlarmType
from alarmhub.core.router import HistoryEvent, Router, StoredSignal
from alarmhub.core.runaway import RunawayMonitor

TARGET_P99_MS = 10.0
DAY_US = 86_400 * 1_000_000
HISTORY_INDEXES = ("ix_history_account_time", "ix_history_incident")
INSERT_COLUMNS = (
    "account_number", "incident_number", "received_us", "code", "event_code", "area", "zone",
    "type", "opr", "alarm_category", "priority", "hist_text", "am_notify", "pr_checksum",
    "second_zone_is", "color", "video", "alarm_id", "source", "destination", "dnis", "panel",
)  # fmt: skip
INSERT_SQL = (
    f"INSERT INTO history ({', '.join(INSERT_COLUMNS)}) "  # noqa: S608
    f"VALUES ({', '.join('?' * len(INSERT_COLUMNS))})"
)
# (code, zones or users it comes from, weight): a day of an ordinary alarm system
EVENT_MIX = (
    ("E401", 8, 22.0),  # opening by a user
    ("R401", 8, 22.0),  # closing
    ("E602", 1, 28.0),  # periodic test report
    ("E130", 16, 6.0),  # burglary
    ("R130", 16, 6.0),  # burglary restore
    ("E570", 16, 4.0),  # bypass
    ("R570", 16, 4.0),
    ("E301", 1, 2.5),  # AC loss
    ("R301", 1, 2.5),
    ("E110", 8, 1.5),  # fire
    ("R110", 8, 1.0),
    ("E120", 4, 0.5),  # panic
)
SOURCE, DESTINATION, DNIS = "bench-site", "bench", "1234"


# event templates from the real router ---------------------------------------------------------


class _TemplateRepository:
    """Just enough of the router's repository to route one signal of a known account."""

    def __init__(self) -> None:
        self.history: list[HistoryEvent] = []

    def line_mask(self, dnis: str) -> str | None:
        return "1######"

    def account_exists(self, account_number: str) -> bool:
        return True

    def alarm_type(self, event_code: str) -> AlarmType:
        return DEFAULTS[event_code]

    def open_alarm(self, account_number: str, event_code: str, area: str, zone: str) -> int | None:
        return None

    def new_incident_number(self) -> int:
        raise AssertionError("no system alarms expected")

    def add_alarm(self, alarm: HistoryEvent, pending_us: int) -> None:
        pass

    def add_history(self, event: HistoryEvent) -> None:
        self.history.append(event)

    def restore_arrived(self, alarm_id: int, at_us: int) -> None:
        pass

    def test_report(self, account_number: str, at_us: int) -> int | None:
        return None


@dataclass(frozen=True)
class Template:
    """The fields of a history row that do not depend on account, time or incident."""

    head: tuple[Any, ...]  # code .. video, in INSERT_COLUMNS order (code to video)
    has_alarm: bool


def templates() -> tuple[list[Template], list[float]]:
    """One template per (code, zone) of the event mix, routed by the real router."""
    result: list[Template] = []
    weights: list[float] = []
    for code, zones, weight in EVENT_MIX:
        for zone in range(1, zones + 1):
            repo = _TemplateRepository()
            router = Router(RunawayMonitor(1_000_000, 2))
            stored = StoredSignal(1, SOURCE, DESTINATION, DNIS, "1", code, "01", f"{zone:03d}", 0)
            router.route(repo, stored, 0)
            (event,) = repo.history
            head = (
                event.code, event.event_code, event.area, event.zone, event.type, event.opr,
                event.alarm_category, event.priority, event.hist_text, "N", event.path.value,
                event.second_zone_is, event.color, "N",
            )  # fmt: skip
            result.append(Template(head, event.alarm_id is not None))
            weights.append(weight / zones)
    return result, weights


# bulk load ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Population:
    accounts: list[str]
    busy: int  # accounts[:busy] are the busy ones
    busy_share: float  # share of all events that the busy accounts send


def population(count: int, busy_fraction: float, busy_share: float) -> Population:
    accounts = [f"1{n:06d}" for n in range(1, count + 1)]
    busy = max(1, round(count * busy_fraction)) if busy_share > 0 else 0
    return Population(accounts, busy, busy_share)


def rows(
    rng: random.Random,
    people: Population,
    kinds: Sequence[Template],
    weights: Sequence[float],
    first_incident: int,
    count: int,
    start_us: int,
    stop_us: int,
) -> Iterator[tuple[Any, ...]]:
    """``count`` history rows received in [start_us, stop_us), oldest first."""
    accounts, busy, share = people.accounts, people.busy, people.busy_share
    quiet = len(accounts) - busy
    width = stop_us - start_us
    times = sorted(start_us + int(rng.random() * width) for _ in range(count))
    chosen = rng.choices(kinds, weights=weights, k=count)
    random_ = rng.random
    incident = first_incident
    for received, kind in zip(times, chosen, strict=True):
        if random_() < share:
            account = accounts[int(random_() * busy)]
        else:
            account = accounts[busy + int(random_() * quiet)]
        yield (
            account, incident, received, *kind.head,
            incident if kind.has_alarm else None, SOURCE, DESTINATION, DNIS, account[1:],
        )  # fmt: skip
        incident += 1


def alarmhub_db_upgrade(data_dir: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "alarmhub", "db", "upgrade", "--data-dir", str(data_dir)],
        check=True, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def bulk_load(
    db: Path, args: argparse.Namespace, people: Population, start_us: int, stop_us: int
) -> dict[str, float]:
    """Fill ``history``; the seconds each step took."""
    kinds, weights = templates()
    rng = random.Random(args.seed)
    conn = sqlite3.connect(db, isolation_level=None)
    steps: dict[str, float] = {}
    index_sql = dict(
        conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'history' "
            "AND sql IS NOT NULL"
        ).fetchall()
    )
    missing = set(HISTORY_INDEXES) - set(index_sql)
    if missing:
        raise SystemExit(f"the schema has no index {sorted(missing)}")
    # bulk load only: no journal, no fsync; a crash here just means building it again
    conn.execute("PRAGMA journal_mode=OFF")
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("PRAGMA cache_size=-1000000")  # 1 GB of page cache for the load
    if not args.incremental_index:
        for name in index_sql:
            conn.execute(f"DROP INDEX {name}")
    batches = max(1, -(-args.events // args.batch))
    span = (stop_us - start_us) / batches
    started = time.perf_counter()
    with Progress(
        TextColumn("loading history"),
        BarColumn(),
        MofNCompleteColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
    ) as progress:
        task = progress.add_task("load", total=args.events)
        done = 0
        for number in range(batches):
            count = min(args.batch, args.events - done)
            batch_start = start_us + int(number * span)
            batch_stop = start_us + int((number + 1) * span)
            conn.execute("BEGIN")
            conn.executemany(
                INSERT_SQL,
                rows(rng, people, kinds, weights, done + 1, count, batch_start, batch_stop),
            )
            conn.execute("COMMIT")
            done += count
            progress.update(task, completed=done)
    steps["insert rows"] = time.perf_counter() - started
    if not args.incremental_index:
        for name, sql in index_sql.items():
            began = time.perf_counter()
            print(f"creating index {name} ...", flush=True)
            conn.execute(sql)
            steps[f"create {name}"] = time.perf_counter() - began
    began = time.perf_counter()
    conn.execute(
        "UPDATE sequence SET value = max(value, ?) WHERE name = 'incident'", (args.events,)
    )
    conn.execute("ANALYZE")
    steps["ANALYZE"] = time.perf_counter() - began
    conn.execute("PRAGMA journal_mode=WAL")  # back to the product's mode
    conn.close()
    return steps


# queries ------------------------------------------------------------------------------------


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    rank = max(1, math.ceil(q * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def spread(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50": percentile(ordered, 0.50),
        "p90": percentile(ordered, 0.90),
        "p99": percentile(ordered, 0.99),
        "max": ordered[-1],
        "mean": statistics.fmean(ordered),
    }


def query_plan(engine: Any, account: str, start_us: int, stop_us: int) -> list[str]:
    """EXPLAIN QUERY PLAN of the exact statement account_history sends to SQLite."""
    from sqlalchemy import event

    from alarmhub.store.queries import account_history

    captured: list[tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        captured.append((statement, parameters))

    with engine.connect() as conn:
        event.listen(engine, "before_cursor_execute", capture)
        try:
            account_history(conn, account, start_us, stop_us, limit=100)
        finally:
            event.remove(engine, "before_cursor_execute", capture)
        statement, parameters = next((s, p) for s, p in captured if "history" in s)
        plan = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters).all()
    return [" ".join(statement.split()), *(f"  {row[-1]}" for row in plan)]


def time_queries(
    engine: Any,
    rng: random.Random,
    accounts: Sequence[str],
    count: int,
    limit: int,
    start_us: int,
    stop_us: int,
) -> dict[str, Any]:
    """Time ``count`` queries of random accounts and one-day windows."""
    from alarmhub.store.queries import account_history

    total: list[float] = []
    inner: list[float] = []
    returned: list[int] = []
    for _ in range(count):
        account = accounts[int(rng.random() * len(accounts))]
        begin = start_us + int(rng.random() * (stop_us - start_us - DAY_US))
        t0 = time.perf_counter()
        with engine.connect() as conn:
            t1 = time.perf_counter()
            found = account_history(conn, account, begin, begin + DAY_US, limit=limit)
            t2 = time.perf_counter()
        t3 = time.perf_counter()
        total.append((t3 - t0) * 1000)
        inner.append((t2 - t1) * 1000)
        returned.append(len(found))
    return {
        "queries": count,
        "total_ms": spread(total),
        "call_ms": spread(inner),
        "rows_mean": statistics.fmean(returned),
        "rows_max": max(returned),
        "at_limit": sum(1 for n in returned if n >= limit),
    }


def show(name: str, result: dict[str, Any], limit: int) -> None:
    t, c = result["total_ms"], result["call_ms"]
    print(
        f"{name}: {result['queries']:,} queries, rows returned mean {result['rows_mean']:.1f}, "
        f"max {result['rows_max']}, {result['at_limit']:,} at the limit of {limit}\n"
        f"  per query, connection + query + rows (ms): p50 {t['p50']:.2f}  p90 {t['p90']:.2f}  "
        f"p99 {t['p99']:.2f}  max {t['max']:.2f}  mean {t['mean']:.2f}\n"
        f"  account_history() call alone (ms):        p50 {c['p50']:.2f}  p90 {c['p90']:.2f}  "
        f"p99 {c['p99']:.2f}  max {c['max']:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0] if __doc__ else None,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--events", type=int, default=10_000_000, help="history rows to load")
    parser.add_argument("--accounts", type=int, default=100_000, help="accounts in the history")
    parser.add_argument("--days", type=int, default=30, help="days the events are spread over")
    parser.add_argument(
        "--busy-accounts", type=float, default=0.01, help="fraction of accounts that are busy"
    )
    parser.add_argument(
        "--busy-share", type=float, default=0.30, help="share of all events the busy ones send"
    )
    parser.add_argument("--queries", type=int, default=2000, help="timed queries, random accounts")
    parser.add_argument(
        "--busy-queries", type=int, default=500, help="timed queries of busy accounts only"
    )
    parser.add_argument("--warmup", type=int, default=100, help="untimed queries first")
    parser.add_argument("--limit", type=int, default=100, help="newest events per query")
    parser.add_argument("--batch", type=int, default=100_000, help="rows per load transaction")
    parser.add_argument(
        "--incremental-index",
        action="store_true",
        help="keep the indexes during the load (slower) instead of re-creating them after it",
    )
    parser.add_argument("--seed", type=int, default=20261122)
    parser.add_argument("--keep", action="store_true", help="keep the data directory")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args()
    if args.events <= 0 or args.accounts <= 0 or args.days <= 0:
        parser.error("--events, --accounts and --days must be positive")

    from alarmhub.store.engine import open_engine

    data_dir = Path(tempfile.mkdtemp(prefix="alarmhub-history-"))
    db = data_dir / "alarmhub.db"
    stop_us = (int(time.time()) // 86_400) * 86_400 * 1_000_000  # midnight UTC today
    start_us = stop_us - args.days * DAY_US
    people = population(args.accounts, args.busy_accounts, args.busy_share)
    results: dict[str, Any] = {"events": args.events, "accounts": args.accounts}
    try:
        print(
            f"data dir {data_dir}; {args.events:,} events of {args.accounts:,} accounts over "
            f"{args.days} days; {people.busy:,} busy accounts send {args.busy_share:.0%} of them; "
            f"{os.cpu_count()} cores",
            flush=True,
        )
        began = time.perf_counter()
        alarmhub_db_upgrade(data_dir)
        steps = {"alarmhub db upgrade": time.perf_counter() - began}
        print(
            "bulk load with PRAGMA synchronous=OFF and journal_mode=OFF (for this load ONLY; "
            "the node always runs WAL with synchronous=FULL)"
            + (
                ""
                if args.incremental_index
                else f"; indexes {', '.join(HISTORY_INDEXES)} dropped and re-created after it"
            ),
            flush=True,
        )
        steps |= bulk_load(db, args, people, start_us, stop_us)
        load_seconds = sum(steps.values())
        size = sum(p.stat().st_size for p in data_dir.glob("alarmhub.db*"))
        for name, seconds in steps.items():
            print(f"  {name:<38} {seconds:8.1f} s")
        print(
            f"  {'total':<38} {load_seconds:8.1f} s = {args.events / load_seconds:,.0f} rows/s; "
            f"database {size / 2**30:.2f} GiB"
        )
        results |= {"load_seconds": steps, "database_bytes": size}

        engine = open_engine(f"sqlite:///{db}")
        with engine.connect() as conn:
            count = conn.exec_driver_sql("SELECT count(*) FROM history").scalar_one()
        print(f"history rows: {count:,}")
        plan = query_plan(engine, people.accounts[0], start_us, start_us + DAY_US)
        uses_index = any(HISTORY_INDEXES[0] in line for line in plan[1:])
        print("query plan (EXPLAIN QUERY PLAN of the statement account_history sends):")
        print("  " + plan[0])
        print("\n".join(plan[1:]))
        print(f"  -> served by {HISTORY_INDEXES[0]}: {'yes' if uses_index else 'NO'}")
        results["plan"] = plan

        rng = random.Random(args.seed + 1)
        time_queries(engine, rng, people.accounts, args.warmup, args.limit, start_us, stop_us)
        every = time_queries(
            engine, rng, people.accounts, args.queries, args.limit, start_us, stop_us
        )
        busy = people.accounts[: people.busy]
        busiest = (
            time_queries(engine, rng, busy, args.busy_queries, args.limit, start_us, stop_us)
            if busy and args.busy_queries > 0
            else None
        )
        engine.dispose()
        print(
            f"\nqueries: account_history(conn, account, start, start + 1 day, limit={args.limit}) "
            f"on random accounts and random one-day windows ({args.warmup} untimed first; the "
            "database was just written, so the OS page cache is warm)"
        )
        show("random accounts", every, args.limit)
        if busiest:
            show(f"busy accounts only (the {people.busy:,} that send most)", busiest, args.limit)
        results |= {"random_accounts": every, "busy_accounts": busiest}
        for name, result in (("random accounts", every), ("busy accounts", busiest)):
            if result:
                p99 = result["total_ms"]["p99"]
                verdict = "met" if p99 < TARGET_P99_MS else "NOT met"
                print(f"target p99 < {TARGET_P99_MS:g} ms, {name}: {p99:.2f} ms, {verdict}")
    finally:
        if args.keep:
            print(f"kept {data_dir}")
        else:
            shutil.rmtree(data_dir, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
