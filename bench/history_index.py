"""What indexing history by account costs a row, in a bare SQLite table of history's shape, and
what indexing it in bulk would save: a design study, not the product's code.

Two ways, in alternating runs on a new database each (WAL, the writer's page cache and
settings, ``--prefill`` rows already there, indexes built):

- ``at once``: the index of (account, time) holds every row, as ``ix_history_account_time``
  does: each row goes in at its account's place, a page of its own in the commit.
- ``in bulk``: rows are written with a flag outside a partial index of (account, time) and
  inside a partial index of the row id (appended, a few pages a commit); every ``--every``
  rows one UPDATE sets the flag of them all, adding them to the index by account in one
  transaction that writes each page it touches once.

Rows come in transactions of ``--batch`` (routing's slice), from ``--accounts`` accounts at
random. CPU time of the process (``time.process_time``) per row, the bulk passes included.
A bulk pass writes one page per account it touches, so its saving depends on how many rows
an account has within ``--every``: try ``--accounts 100000``.

    .venv/bin/python bench/history_index.py [--rows 96000] [--accounts 5000] [--every 12000]
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

TEXT_COLUMNS = 20  # history's other columns, as short texts


def _rows(count: int, first_time: int, accounts: int) -> list[tuple[object, ...]]:
    texts = tuple(f"v{n}" for n in range(TEXT_COLUMNS))
    return [
        (f"{random.randrange(accounts):06d}", first_time + n, first_time + n, *texts)
        for n in range(count)
    ]


def _database(path: Path, bulk: bool, prefill: int, accounts: int) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None)
    for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "cache_size=-65536",
                   "temp_store=MEMORY"):  # fmt: skip
        db.execute(f"PRAGMA {pragma}")
    texts = ", ".join(f"c{n} TEXT" for n in range(TEXT_COLUMNS))
    db.execute(
        "CREATE TABLE history (event_id INTEGER PRIMARY KEY AUTOINCREMENT, account TEXT, "
        f"received_us INTEGER, incident INTEGER, indexed BOOLEAN NOT NULL DEFAULT 1, {texts})"
    )
    if bulk:
        db.execute("CREATE INDEX ix_account ON history (account, received_us) WHERE indexed = 1")
        db.execute("CREATE INDEX ix_tail ON history (event_id) WHERE indexed = 0")
    else:
        db.execute("CREATE INDEX ix_account ON history (account, received_us)")
    db.execute("CREATE INDEX ix_incident ON history (incident)")
    db.execute("BEGIN")
    db.executemany(_insert(1, indexed=True), _rows(prefill, 0, accounts))
    db.execute("COMMIT")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return db


def _insert(rows: int, indexed: bool) -> str:
    names = ", ".join(["account", "received_us", "incident", "indexed"]
                      + [f"c{n}" for n in range(TEXT_COLUMNS)])  # fmt: skip
    one = "(?, ?, ?, " + ("1" if indexed else "0") + ", " + ", ".join("?" * TEXT_COLUMNS) + ")"
    return f"INSERT INTO history ({names}) VALUES " + ", ".join([one] * rows)  # noqa: S608


def run(bulk: bool, args: argparse.Namespace, directory: Path) -> float:
    path = directory / f"history-{'bulk' if bulk else 'now'}-{time.monotonic_ns()}.db"
    db = _database(path, bulk, args.prefill, args.accounts)
    batches = [_rows(args.batch, 10**12 + n * args.batch, args.accounts)
               for n in range(args.rows // args.batch)]  # fmt: skip
    statement = _insert(args.batch, indexed=not bulk)
    bounds = [f"{args.accounts * n // args.ranges:06d}" for n in range(args.ranges)] + ["~"]
    started, since_pass, turn, holds = time.process_time(), 0, 0, []
    for batch in batches:
        db.execute("BEGIN IMMEDIATE")
        db.execute(statement, [value for row in batch for value in row])
        db.execute("COMMIT")
        since_pass += len(batch)
        if bulk and since_pass >= args.every // args.ranges:
            held = time.perf_counter()
            db.execute("BEGIN IMMEDIATE")
            db.execute(
                "UPDATE history SET indexed = 1 WHERE indexed = 0 AND account >= ? AND account < ?",
                (bounds[turn], bounds[turn + 1]),
            )
            db.execute("COMMIT")
            holds.append(time.perf_counter() - held)
            since_pass, turn = 0, (turn + 1) % args.ranges
    spent = time.process_time() - started
    db.close()
    if holds:
        print(f"  a pass held the database {statistics.median(holds) * 1e3:.1f} ms (median), "
              f"{max(holds) * 1e3:.1f} ms at most", flush=True)  # fmt: skip
    return spent / (len(batches) * args.batch) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=96_000, help="rows written a run")
    parser.add_argument("--prefill", type=int, default=300_000, help="rows there before")
    parser.add_argument("--accounts", type=int, default=5_000)
    parser.add_argument("--batch", type=int, default=32, help="rows a transaction")
    parser.add_argument("--every", type=int, default=12_000, help="rows a bulk pass")
    parser.add_argument("--runs", type=int, default=2, help="runs of each way")
    parser.add_argument(
        "--ranges", type=int, default=1, help="a pass covers this fraction of the accounts"
    )
    args = parser.parse_args()
    results: dict[str, list[float]] = {"at once": [], "in bulk": []}
    with tempfile.TemporaryDirectory() as directory:
        for _ in range(args.runs):
            for name, bulk in (("at once", False), ("in bulk", True)):
                results[name].append(run(bulk, args, Path(directory)))
                print(f"{name}: {results[name][-1]:.2f} µs CPU a row", flush=True)
    for name, values in results.items():
        print(f"{name}: median {statistics.median(values):.2f} µs CPU a row")


if __name__ == "__main__":
    main()
