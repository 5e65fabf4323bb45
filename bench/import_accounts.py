"""Bulk import of a station's response data through the real CLI: time, rows/s and peak memory.

Writes the fictitious example data set (``alarmhub.example_data``: 3 contacts and about 8 zones
an account) for each size into a temporary directory, then runs ``alarmhub account import``,
``zone import`` and ``contact import`` (``--steps`` adds ``user``) as child processes against a
fresh data directory: SQLite by default, or a new database on the PostgreSQL server of
``--database-url`` (dropped after). Each step's wall time, rows/s, CPU time and peak RSS (the
child's own high-water mark, from ``wait4``) is printed, then peak RSS against the number of
accounts: an import reads and writes a chunk at a time, so its memory should not grow with the
file. Target: the three imports of 100,000 accounts in under 60 s in all.

    python bench/import_accounts.py [--sizes 10000,50000,100000] [--database-url URL]
        [--steps account,zone,contact] [--profile DIR] [--json FILE] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from alarmhub import example_data

TARGET_SECONDS = 60.0
TARGET_ACCOUNTS = 100_000
TARGET_STEPS = ("account", "zone", "contact")
FILES = {
    "account": "accounts.csv",
    "zone": "zones.csv",
    "user": "users.csv",
    "contact": "contacts.csv",
}


@dataclass
class Step:
    accounts: int
    kind: str
    rows: int
    seconds: float
    cpu_seconds: float
    peak_rss_mib: float
    added: int
    updated: int
    refused: int

    @property
    def rate(self) -> float:
        return self.rows / self.seconds if self.seconds else 0.0


def alarmhub_command() -> list[str]:
    """The installed entry point next to this interpreter, else ``python -m alarmhub``."""
    script = Path(sys.executable).with_name("alarmhub")
    return [str(script)] if script.exists() else [sys.executable, "-m", "alarmhub"]


def run(
    args: list[str], env: dict[str, str], profile: Path | None = None
) -> tuple[float, Any, str]:
    """Run ``alarmhub ARGS`` to its end (under cProfile when ``profile`` names a file): wall
    seconds, the child's resource usage (``wait4``), its stdout."""
    command = [*alarmhub_command(), *args]
    if profile is not None:
        command = [sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "alarmhub", *args]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if process.returncode not in (0, 1):  # 1: some rows refused, reported below
        sys.exit(f"{' '.join(command)} exited {process.returncode}:\n{stdout}{stderr}")
    return seconds, usage, stdout


class Database:
    """A fresh database for one size: SQLite in the data directory, or a new PostgreSQL one."""

    def __init__(self, server_url: str | None) -> None:
        self.server_url = server_url
        self.name: str | None = None

    def create(self) -> str | None:
        if self.server_url is None:
            return None
        from sqlalchemy import text

        from alarmhub.store.engine import open_engine

        self.name = f"ah_bench_import_{uuid.uuid4().hex[:8]}"
        admin = open_engine(self.server_url).execution_options(isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{self.name}"'))
        admin.dispose()
        return f"{self.server_url.rsplit('/', 1)[0]}/{self.name}"

    def drop(self) -> None:
        if self.server_url is None or self.name is None:
            return
        from sqlalchemy import text

        from alarmhub.store.engine import open_engine

        admin = open_engine(self.server_url).execution_options(isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)'))
        admin.dispose()
        self.name = None


def measure(
    accounts: int, steps: list[str], root: Path, server_url: str | None, profile: Path | None
) -> list[Step]:
    """Generate ``accounts`` accounts and import them step by step into a fresh database."""
    data = root / f"data-{accounts}"
    data_dir = root / f"node-{accounts}"
    data_dir.mkdir(mode=0o700)
    started = time.perf_counter()
    counts = example_data.write(data, accounts)
    print(f"{accounts:,} accounts generated in {time.perf_counter() - started:.1f} s", flush=True)
    database = Database(server_url)
    env = {**os.environ, "ALARMHUB_DATA_DIR": str(data_dir)}
    results: list[Step] = []
    try:
        url = database.create()
        if url is not None:
            env["ALARMHUB_DATABASE_URL"] = url
        run(["db", "upgrade"], env)  # neither the schema nor the agencies are part of a step
        if "account" in steps:
            for code, kind, name, phone in example_data.agencies():
                run(["agency", "add", code, "--kind", kind, "--name", name, "--phone", phone], env)
        for kind in steps:
            file = data / FILES[kind]
            where = profile / f"{kind}-{accounts}.prof" if profile else None
            seconds, usage, stdout = run([kind, "import", str(file), "--json"], env, where)
            outcome = json.loads(stdout)
            step = Step(
                accounts=accounts,
                kind=kind,
                rows=counts[FILES[kind]],
                seconds=seconds,
                cpu_seconds=usage.ru_utime + usage.ru_stime,
                peak_rss_mib=usage.ru_maxrss / 1024,  # KiB on Linux
                added=outcome["added"],
                updated=outcome["updated"],
                refused=len(outcome["refused"]),
            )
            results.append(step)
            print(
                f"  {kind:8} {step.rows:>9,} rows {step.seconds:7.1f} s {step.rate:>9,.0f} rows/s"
                f"  CPU {step.cpu_seconds:6.1f} s  peak RSS {step.peak_rss_mib:6.1f} MiB"
                f"  added {step.added:,}, updated {step.updated:,}, refused {step.refused:,}",
                flush=True,
            )
    finally:
        database.drop()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0] if __doc__ else None,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--sizes", default="10000,50000,100000", help="numbers of accounts, one run each"
    )
    parser.add_argument(
        "--steps",
        default=",".join(TARGET_STEPS),
        help="imports in order, some of account,zone,user,contact",
    )
    parser.add_argument(
        "--database-url",
        help="a PostgreSQL server URL: each size gets a new database on it, dropped after "
        "(default: SQLite in a new data directory)",
    )
    parser.add_argument("--profile", type=Path, help="write a cProfile file per step here")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    parser.add_argument("--keep", action="store_true", help="keep the generated files and data")
    args = parser.parse_args()
    sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
    steps = [x.strip() for x in args.steps.split(",") if x.strip()]
    if not sizes or min(sizes) < 1 or not steps or set(steps) - set(FILES):
        parser.error(f"--sizes are positive numbers; --steps are some of {', '.join(FILES)}")
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)

    root = Path(tempfile.mkdtemp(prefix="alarmhub-import-"))
    backend = "PostgreSQL" if args.database_url else "SQLite"
    print(f"{backend}; steps {', '.join(steps)}; {os.cpu_count()} cores", flush=True)
    results: list[Step] = []
    try:
        for accounts in sizes:
            results += measure(accounts, steps, root, args.database_url, args.profile)
    finally:
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)

    print("\npeak RSS (MiB) of each import against the number of accounts:")
    print(f"  {'accounts':>9}  " + "  ".join(f"{kind:>8}" for kind in steps))
    for accounts in sizes:
        row = [s for s in results if s.accounts == accounts]
        print(f"  {accounts:>9,}  " + "  ".join(f"{s.peak_rss_mib:8.1f}" for s in row))
    print("\nseconds of the imports of each size (the target counts account, zone, contact):")
    for accounts in sizes:
        row = [s for s in results if s.accounts == accounts]
        total = sum(s.seconds for s in row if s.kind in TARGET_STEPS)
        shown = ", ".join(f"{s.kind} {s.seconds:.1f}" for s in row)
        verdict = ""
        if accounts == TARGET_ACCOUNTS:
            met = "met" if total < TARGET_SECONDS else "not met"
            verdict = f"  (target < {TARGET_SECONDS:.0f} s: {met})"
        print(f"  {accounts:>9,}: {total:.1f} s ({shown}){verdict}")
    if args.json:
        args.json.write_text(
            json.dumps([{**asdict(s), "rows_per_s": s.rate} for s in results], indent=2) + "\n"
        )


if __name__ == "__main__":
    main()
