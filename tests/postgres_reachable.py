"""Exit 0 when the PostgreSQL server of the suite answers, 1 (saying why) when it does not.

``python -m tests.postgres_reachable`` tries ``ALARMHUB_TEST_DATABASE_URL``: ``make test`` runs
the PostgreSQL suite only when this succeeds, and says plainly that it skipped it otherwise.
"""

from __future__ import annotations

import os
import sys

import psycopg
from sqlalchemy.engine import make_url


def main(url: str) -> int:
    try:
        with psycopg.connect(url, connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        shown = make_url(url).render_as_string(hide_password=True)
        print(f"no PostgreSQL server answered at {shown}: {reason}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(os.environ.get("ALARMHUB_TEST_DATABASE_URL", "")))
