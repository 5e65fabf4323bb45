#!/usr/bin/env python3
"""Handling report: how long ``alarmhub report handling`` takes to compute over a station's
history of resolved alarms, for a day, a week and a month.

What is measured: the wall time and CPU time of ``store.reports.handling`` (the query of the
alarms resolved in the window, through the index on the time of resolution, and the medians and
p90s computed from them), each window asked ``--repeat`` times, the best kept.

Setting: a fresh database (SQLite in a temporary directory, or the PostgreSQL server named by
``--database-url``, in a database of its own made for the run) holding ``--days`` days of
resolved alarms, ``--per-day`` a day, of 12 TYPEs, 8 operators and 5,000 accounts, a fifth of
them false alarms, and one dispatch in ten; the rows are written straight into the tables
(the report reads only them). The newest day is the one a daily report asks for.

    .venv/bin/python bench/handling_report.py [--days 100] [--per-day 10000]
        [--database-url postgresql://postgres@127.0.0.1:5432/postgres]
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, insert, text
from sqlalchemy.engine import Engine, make_url

from alarmhub.store import reports, schema
from alarmhub.store.engine import open_engine, upgrade

DAY_US = 86_400_000_000
END_US = 1_800_000_000_000_000
TYPES = [
    "BURG",
    "FIRE",
    "PANIC",
    "ACPWR",
    "TRBL",
    "MED",
    "HOLD",
    "TAMP",
    "LOWBA",
    "COMM",
    "GAS",
    "CO",
]
OPERATORS = [f"{n:03d}" for n in range(1, 9)]
RESOLUTIONS = ["FA", "FAE", "KEYH", "NOCON", "RSTR", "RSTR", "RSTR", "DISP", "TEST", "SVC"]
BATCH = 5_000


def rows_of_day(day: int, per_day: int, first_id: int, rng: random.Random) -> list[dict[str, Any]]:
    start = END_US - (day + 1) * DAY_US
    rows = []
    for i in range(per_day):
        pending = start + rng.randrange(DAY_US - 3_600_000_000)
        taken = pending + rng.randrange(5, 240) * 1_000_000
        resolved = taken + rng.randrange(30, 1_800) * 1_000_000
        rows.append({
            "alarm_id": first_id + i, "state": "resolved",
            "account_number": f"7{rng.randrange(5_000):05d}", "type": rng.choice(TYPES),
            "priority": "D", "color": "4F", "hist_text": "BURGLARY ZONE 001", "path": "PENDING",
            "code": "E130", "event_code": "130", "area": "01", "zone": "001", "source": "bench",
            "destination": "rx", "dnis": "4321", "panel": "0001", "received_us": pending,
            "pending_us": pending, "opr": rng.choice(OPERATORS), "taken_us": taken,
            "resolved_us": resolved, "resolution": rng.choice(RESOLUTIONS),
        })  # fmt: skip
    return rows


def dispatches(rows: list[dict[str, Any]], rng: random.Random) -> list[dict[str, Any]]:
    return [
        {"alarm_id": r["alarm_id"], "account_number": r["account_number"],
         "agency": rng.choice(["police", "fire", "medical"]), "avs": rng.randrange(5),
         "reference": "R1", "opr": r["opr"], "at_us": r["taken_us"] + 60_000_000}
        for r in rows if r["alarm_id"] % 10 == 0
    ]  # fmt: skip


def fill(engine: Engine, days: int, per_day: int) -> None:
    rng = random.Random(7)
    loaded = 0
    for day in range(days):
        rows = rows_of_day(day, per_day, 1 + day * per_day, rng)
        with engine.begin() as conn:
            for start in range(0, len(rows), BATCH):
                chunk = rows[start : start + BATCH]
                conn.execute(insert(schema.alarm), chunk)
                conn.execute(insert(schema.dispatch), dispatches(chunk, rng))
        loaded += len(rows)
        print(f"\rloaded {loaded:,} alarms ({day + 1}/{days} days)", end="", flush=True)
    print()
    with engine.begin() as conn:
        conn.execute(text("ANALYZE"))


def measure(engine: Engine, days: int, repeat: int) -> tuple[float, float, int]:
    best_wall = best_cpu = float("inf")
    handled = 0
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        with engine.connect() as conn:
            report = reports.handling(conn, END_US - days * DAY_US, END_US)
        best_wall = min(best_wall, time.perf_counter() - wall)
        best_cpu = min(best_cpu, time.process_time() - cpu)
        handled = int(report["handled"])
    return best_wall, best_cpu, handled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=100)
    parser.add_argument("--per-day", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--database-url", default="")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bench-report-"))
    admin: Engine | None = None
    name = f"bench_report_{uuid.uuid4().hex[:8]}"
    if args.database_url:
        admin = create_engine(args.database_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f"CREATE DATABASE {name}"))
        url = make_url(args.database_url).set(database=name).render_as_string(hide_password=False)
    else:
        url = f"sqlite:///{workdir / 'alarmhub.db'}"
    engine = open_engine(url)
    try:
        upgrade(engine)
        fill(engine, args.days, args.per_day)
        print(f"{engine.dialect.name}: {args.days * args.per_day:,} resolved alarms in all")
        print("window   alarms    wall ms   cpu ms   µs cpu/alarm")
        for days in (1, 7, 30):
            wall, cpu, handled = measure(engine, days, args.repeat)
            per = cpu * 1e6 / max(handled, 1)
            print(f"{days:>3} d {handled:>10,} {wall * 1e3:>9.1f} {cpu * 1e3:>8.1f} {per:>10.2f}")
    finally:
        engine.dispose()
        if admin is not None:
            with admin.connect() as conn:
                conn.execute(text(f"DROP DATABASE {name}"))
            admin.dispose()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
