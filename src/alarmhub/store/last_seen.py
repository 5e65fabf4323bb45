"""The last-seen rows of supervision (heartbeat pairs, DC-09 accounts), written in bulk.

A node writes the entries that changed since its last flush (``alarmhub.node.supervised``): one
``INSERT ... ON CONFLICT DO UPDATE`` for many rows, on both dialects. A statement per row held
the database's write lock for as long as thousands of rows took in Python, and the writer
process, whose commits wait for that lock, with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Table, case, func, null

from alarmhub.store.response import upsert


def write_seen(
    conn: Connection,
    table: Table,
    key: Sequence[str],
    seen: str,
    rows: Sequence[dict[str, Any]],
    insert_only: Sequence[str] = (),
) -> None:
    """Write ``rows`` (dicts with the ``key`` columns, the time column ``seen``, ``failed_us``
    and the columns to update, plus ``insert_only`` columns used for new rows only). The newest
    ``seen`` wins (another node may have written a newer one); ``failed_us`` keeps its first
    time while the entry stays down and is cleared when it is not (None in the row)."""
    if not rows:
        return
    old = table.c
    fixed = {*key, seen, "failed_us", *insert_only}

    def changes(new: Any) -> dict[str, Any]:
        changed: dict[str, Any] = {name: new[name] for name in rows[0] if name not in fixed}
        changed[seen] = case((old[seen] > new[seen], old[seen]), else_=new[seen])
        changed["failed_us"] = case(
            (new.failed_us.is_(None), null()), else_=func.coalesce(old.failed_us, new.failed_us)
        )
        return changed

    upsert(conn, table, rows, key, changes)
