"""The audit trail of the integrator API: every change made through it is a record of the
account's history (TYPE ``API``, PR_CHECKSUM ``API``) naming the key that made it, in the
transaction of the change. Like an operator's record, history shows it with SEARCHTYPE=OPR only
(``core.router.OPERATOR_RECORDS``)."""

from __future__ import annotations

from sqlalchemy import Connection, insert

from alarmhub.core.alarm_types import cut_text
from alarmhub.core.router import RoutePath
from alarmhub.store import schema
from alarmhub.store.commit import allocate_incidents

TYPE = "API"


def record(conn: Connection, key_name: str, what: str, account: str, now_us: int) -> None:
    """One record: ``API <key>: <what>`` (e.g. ``API dealer1: PUT ACCOUNT``) on ``account``
    (``""``: the station's own)."""
    row = {
        "account_number": account, "incident_number": allocate_incidents(conn, 1),
        "received_us": now_us, "code": "", "event_code": "", "area": "", "zone": "",
        "type": TYPE, "opr": None, "alarm_category": "S", "priority": "z",
        "hist_text": cut_text(f"API {key_name}: {what}"), "am_notify": "N",
        "pr_checksum": RoutePath.API.value, "second_zone_is": "N", "color": "", "video": "N",
        "alarm_id": None, "source": "", "destination": "", "dnis": "", "panel": "", "note": None,
    }  # fmt: skip
    conn.execute(insert(schema.history).values(row))
