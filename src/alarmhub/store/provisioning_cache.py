"""The provisioning that routing reads on every signal (line masks, alarm types, the TYPEs in
storm mode, the accounts with an open/close schedule, the accounts on test, the webhooks whose
deliveries its events make, the automation outputs its signals go to, the kinds of notification
contacts subscribe to), cached and reloaded when
the provisioning revision changes; and what routing has learnt of the accounts it met
(:class:`AccountMemory`), kept as long as the data it came from is unchanged."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import Connection, select

from alarmhub.core import on_test
from alarmhub.core.alarm_types import AlarmType, merged
from alarmhub.core.outputs import OutputSettings
from alarmhub.store import (
    notifications,
    outputs,
    provisioning,
    schedules,
    schema,
    storm,
    webhooks,
)
from alarmhub.store.alarm_response import RESPONSE, Descriptions
from alarmhub.store.prepared import Prepared

_REVISIONS = Prepared(
    select(schema.revision.c.name, schema.revision.c.value).where(
        schema.revision.c.name.in_((provisioning.PROVISIONING, RESPONSE))
    )
)


class AccountMemory:
    """What routing learnt of accounts in earlier batches, so that a batch looks up only the
    accounts it has not met: which exist (until the provisioning revision changes), their zone
    descriptions, user names and contacts subscribed to notifications (until the response data's
    revision changes), and
    each account's open FAIL TO TEST alarm, which only routing and supervision change; and each
    line's UNKNOWN ACCOUNT alarm, checked by its key to be still open before it is joined. Where
    another process may change that alarm (the nodes of a shared database), the router forgets
    it before every batch (:meth:`forget_test_alarms`).

    Bounded: past ``MAX_ENTRIES`` accounts, it starts again empty."""

    MAX_ENTRIES = 200_000

    def __init__(self) -> None:
        self.known: set[str] = set()
        self.unknown: set[str] = set()
        self.test_alarms: dict[str, int | None] = {}  # a known account's FAIL TO TEST alarm
        self.descriptions: Descriptions = {}
        self.described: set[str] = set()  # the accounts whose descriptions are here
        # each account's contacts subscribed to notifications (response data, as descriptions)
        self.recipients: dict[str, list[notifications.Recipient]] = {}
        # each line's UNKNOWN ACCOUNT alarm met last, checked to be open before it is joined
        self.unknown_alarms: dict[tuple[str, str], int] = {}

    def forget_accounts(self) -> None:
        self.known, self.unknown, self.test_alarms = set(), set(), {}

    def forget_test_alarms(self) -> None:
        """Forget the accounts' FAIL TO TEST alarms, to be looked up again."""
        self.test_alarms = {}

    def forget_descriptions(self) -> None:
        self.descriptions, self.described, self.recipients = {}, set(), {}

    def bound(self) -> None:
        if len(self.known) + len(self.unknown) > self.MAX_ENTRIES:
            self.forget_accounts()
        if max(len(self.described), len(self.recipients)) > self.MAX_ENTRIES:
            self.forget_descriptions()
        if len(self.unknown_alarms) > self.MAX_ENTRIES:
            self.unknown_alarms = {}


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
    outputs: list[OutputSettings] = field(default_factory=list)  # automation outputs
    notify: frozenset[str] = frozenset()  # the kinds of notification contacts subscribe to

    response_revision: int = -1
    memory: AccountMemory = field(default_factory=AccountMemory)

    def refresh(self, conn: Connection) -> None:
        revisions: dict[str, int] = dict(_REVISIONS.rows(conn))
        response = int(revisions.get(RESPONSE, 0))
        if response != self.response_revision:
            self.memory.forget_descriptions()
            self.notify = notifications.subscribed_kinds(conn)  # contacts are response data
            self.response_revision = response
        current = int(revisions.get(provisioning.PROVISIONING, 0))
        if current == self.revision:
            return
        self.memory.forget_accounts()
        rows = conn.execute(select(schema.dnis.c.dnis, schema.dnis.c.line_mask))
        self.masks = {dnis: mask for dnis, mask in rows}
        self.alarm_types = merged(provisioning.alarm_type_overrides(conn))
        self.storm_types = storm.storm_types(conn)
        self.scheduled = schedules.scheduled_accounts(conn)
        self.tests = running_tests(conn)
        self.webhooks = webhooks.subscribed(conn)
        self.outputs = outputs.settings(conn)
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
