"""The provisioning that routing reads on every signal (line masks, alarm types, the TYPEs in
storm mode, the accounts with an open/close schedule), cached and reloaded when the
provisioning revision changes."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import Connection, select

from alarmhub.core.alarm_types import AlarmType, merged
from alarmhub.store import provisioning, schedules, schema, storm


@dataclass
class ProvisioningCache:
    """Provisioning data the router reads on every signal, reloaded when it changes."""

    revision: int = -1
    masks: dict[str, str] = field(default_factory=dict)
    alarm_types: dict[str, AlarmType] = field(default_factory=dict)
    storm_types: frozenset[str] = frozenset()
    scheduled: frozenset[str] = frozenset()  # accounts with an open/close schedule

    def refresh(self, conn: Connection) -> None:
        current = provisioning.revision(conn)
        if current == self.revision:
            return
        rows = conn.execute(select(schema.dnis.c.dnis, schema.dnis.c.line_mask))
        self.masks = {dnis: mask for dnis, mask in rows}
        self.alarm_types = merged(provisioning.alarm_type_overrides(conn))
        self.storm_types = storm.storm_types(conn)
        self.scheduled = schedules.scheduled_accounts(conn)
        self.revision = current
