"""The outbox of events: written in the transaction of the change each reports (so never lost
by a crash, never there for a change that rolled back), read by the webhook deliveries and the
event stream. Every writer of events holds the incident counter's lock (routing, supervision,
operators' and the API's actions), so event ids follow the order of the commits."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from sqlalchemy import Connection, insert

from alarmhub.core import events
from alarmhub.store import schema


def publish(conn: Connection, kind: str, account: str, data: Mapping[str, Any], at_us: int) -> None:
    """Put one event in the outbox."""
    assert kind in events.KINDS, kind
    conn.execute(
        insert(schema.event).values(
            kind=kind,
            account_number=account,
            body=orjson.dumps(events.envelope(kind, at_us, data)).decode(),
            at_us=at_us,
        )
    )
