"""Write a fictitious station's data as the CSV files the import commands read.

    python examples/generate.py [--accounts 300] [--seed 17] [--out examples]

The rows come from ``alarmhub.example_data`` (the demo of ``alarmhub serve --demo`` loads the
same default set), streamed to the files account by account: 100,000 accounts take a few
seconds and no more memory than 300. ``--no-agency-columns`` leaves each account's police, fire
and medical agency and its permit out of accounts.csv.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from alarmhub import example_data

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--accounts", type=int, default=example_data.DEFAULT_ACCOUNTS)
    parser.add_argument("--seed", type=int, default=example_data.DEFAULT_SEED)
    parser.add_argument("--out", type=Path, default=HERE, help="directory (default: examples/)")
    parser.add_argument("--no-agency-columns", dest="agency_columns", action="store_false")
    args = parser.parse_args(argv)
    if args.accounts < 1:
        parser.error("--accounts must be at least 1")
    started = time.perf_counter()
    counts = example_data.write(args.out, args.accounts, args.seed, args.agency_columns)
    seconds = time.perf_counter() - started
    for name, rows in counts.items():
        print(f"{args.out / name}: {rows:,} rows")
    print(f"{seconds:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
