"""The provisioning that routing reads on every signal (line masks, alarm types, the TYPEs in
storm mode, the accounts with an open/close schedule, the accounts on test, the webhooks whose
deliveries its events make), cached and reloaded when the provisioning revision changes."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import Connection, select

from alarmhub.core import on_test
from alarmhub.core.alarm_types import AlarmType, merged
from alarmhub.store import provisioning, schedules, schema, storm, webhooks


@dataclass
class ProvisioningCache:
    """Provisioning data the router reads on every signal, reloaded when it changes."""

    revision: int = -1
    masks: dict[str, str] = field(default_factory=dict)
    alarm_types: dict[str, AlarmType] = field(default_factory=dict)
    storm_types: frozenset[str] = frozenset()
    scheduled: frozenset[str] = frozenset()  # accounts with an open/close schedule
    tests: dict[str, on_test.Test] = field(default_factory=dict)
    webhooks: list[webhooks.Subscribed] = field(default_factory=list)

    def refresh(self, conn: Connection) -> None:
        current = provisioning.revision(conn)
        if current == self.revision:
            return
        rows = conn.execute(select(schema.dnis.c.dnis, schema.dnis.c.line_mask))
        self.masks = {dnis: mask for dnis, mask in rows}
        self.alarm_types = merged(provisioning.alarm_type_overrides(conn))
        self.storm_types = storm.storm_types(conn)
        self.scheduled = schedules.scheduled_accounts(conn)
        self.tests = running_tests(conn)
        self.webhooks = webhooks.subscribed(conn)
        self.revision = current


def running_tests(conn: Connection) -> dict[str, on_test.Test]:
    """The running tests by account (those not returned yet; ``store.on_test`` keeps them and
    bumps the provisioning revision whenever one starts, changes or ends)."""
    t = schema.on_test.c
    rows = conn.execute(
        select(t.account_number, t.zones, t.types, t.started_us, t.ends_us)
        .where(t.ended_us.is_(None))
        .order_by(t.test_id)
    )
    return {
        account: on_test.Test(
            account, frozenset(on_test.split(zones)), frozenset(on_test.split(types)), start, end
        )
        for account, zones, types, start, end in rows
    }
