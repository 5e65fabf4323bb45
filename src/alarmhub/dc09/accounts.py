"""The DC-09 accounts on a node: keys and line mappings (following provisioning changes), and
supervision (each account's last message in memory, written in batches like heartbeats).

A provisioned account that has reported is supervised from then on, across restarts. An account
is provisioned when the station set a key or an interval for it (``dc09 key set``, ``dc09
account interval``), or when the line it reports on maps to a dnis whose line mask gives it an
account that exists in account data; the latter is looked up in the database in batches, off
the event loop, and remembered until provisioning changes. An account that is not provisioned
is never supervised: its events still raise UNKNOWN ACCOUNT alarms. No ACKed message
within its interval marks it failed at once in the database, where the writer process raises
COMMUNICATION FAILURE; its next message marks it reporting again (the restoral). After a start
every account gets a full interval before it can fail.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from cryptography.fernet import Fernet
from sqlalchemy import Connection
from sqlalchemy.engine import Engine

from alarmhub import metrics
from alarmhub.clock import now_us
from alarmhub.core import units
from alarmhub.node.supervised import BatchedSupervision
from alarmhub.store import dc09
from alarmhub.store.following import FollowsProvisioning
from alarmhub.store.leadership import Leadership
from alarmhub.store.writer import SignalWriter

log = logging.getLogger("alarmhub.dc09")
ASK_SECONDS = 0.5
ASK_MAX = 10_000  # senders waiting to be looked up; more are left for their next message
KNOWN_MAX = 100_000  # senders remembered as provisioned or not


@dataclass(slots=True)
class Link:
    """What the node knows of one DC-09 account's reporting."""

    account: str
    last_message_us: int
    receiver: str
    line: str
    failed: bool = False


class AccountBook(FollowsProvisioning, BatchedSupervision[str, dc09.Reported]):
    """Keys, line mappings and the supervision state of every DC-09 account."""

    name = "dc09-accounts"
    kind = "dc09"
    supervised_gauge = metrics.DC09_ACCOUNTS_SUPERVISED
    failed_gauge = metrics.DC09_ACCOUNTS_FAILED

    def __init__(
        self,
        engine: Engine,
        writer: SignalWriter,
        leadership: Leadership,
        station_key: Fernet,
        default_interval_s: int,
        flush_seconds: float,
    ) -> None:
        super().__init__(engine)
        self._init_batches(writer, leadership, flush_seconds)
        self._station_key = station_key
        self._default_s = default_interval_s
        self._lines: dict[tuple[str, str], str] = {}
        self._setups: dict[str, dc09.AccountSetup] = {}
        self.links: dict[str, Link] = {}
        self._known: dict[dc09.Sender, bool] = {}
        self._generation = 0  # of the provisioning the known answers hold for
        self._asking: dict[dc09.Sender, int] = {}
        self._asker: asyncio.Task[None] | None = None

    # provisioning -------------------------------------------------------------------------

    def refresh(self, conn: Connection) -> None:
        self._lines = dc09.lines(conn)
        self._setups = dc09.setups(conn, self._station_key)
        self._known = {}  # lines, masks or accounts may have changed
        self._generation += 1

    def key_of(self, account: str) -> bytes | None:
        setup = self._setups.get(account)
        return setup.key if setup is not None else None

    def dnis_of(self, receiver: str, line: str) -> str | None:
        return self._lines.get((receiver, line))

    def interval_s(self, account: str) -> int:
        """The account's supervision interval in seconds; 0 when it is not supervised."""
        setup = self._setups.get(account)
        if setup is None or setup.supervision_s is None:
            return self._default_s
        return setup.supervision_s

    def _overdue(self, account: str, link: Link, now: int) -> bool:
        interval = self.interval_s(account)
        return interval > 0 and now - link.last_message_us > units.seconds_us(interval)

    # supervision --------------------------------------------------------------------------

    def recall(self, conn: Connection) -> None:
        """Supervise every account that ever reported; each gets a full interval from now."""
        started = now_us()
        for row in self.stored(conn):
            self.links[row.account] = Link(
                row.account, max(row.last_message_us, started), row.receiver, row.line, row.failed
            )
        self._gauges()

    def suspects(self, now: int) -> list[str]:
        return [a for a, link in self.links.items() if link.failed or self._overdue(a, link, now)]

    def stored(
        self, conn: Connection, failed_only: bool = False, keys: Collection[str] | None = None
    ) -> Sequence[dc09.Reported]:
        return dc09.reported(conn, failed_only, keys)

    def count_stored(self, conn: Connection) -> int:
        return dc09.count_reported(conn)

    def entries(self) -> dict[str, Link]:
        return self.links

    def entry_key(self, row: dc09.Reported) -> str:
        return row.account

    def merge(self, rows: Sequence[dc09.Reported]) -> None:
        for row in rows:
            link = self.links.get(row.account)
            if link is None:
                self.links[row.account] = Link(
                    row.account, row.last_message_us, row.receiver, row.line, row.failed
                )
            elif row.last_message_us > link.last_message_us:
                link.last_message_us, link.receiver, link.line = (
                    row.last_message_us,
                    row.receiver,
                    row.line,
                )
            if link is not None and not self.changed_here(row.account):
                link.failed = row.failed
        self._gauges()

    async def start(self) -> None:
        await super().start()
        self._start_loops()
        self._asker = asyncio.create_task(self._ask_loop(), name="dc09-provisioned")

    async def stop(self) -> None:
        await super().stop()
        if self._asker is not None:
            self._asker.cancel()
        await self._stop_loops()

    def _provisioned(self, sender: dc09.Sender, now: int) -> bool:
        """Whether ``sender`` is provisioned, as far as known now; when not known yet, it is
        asked (and supervised from ``now`` if it is)."""
        setup = self._setups.get(sender[0])
        if setup is not None and (setup.key is not None or setup.supervision_s is not None):
            return True
        known = self._known.get(sender)
        if known is None and len(self._asking) < ASK_MAX:
            self._asking.setdefault(sender, now)
        return bool(known)

    async def _ask_loop(self) -> None:
        while True:
            await asyncio.sleep(ASK_SECONDS)
            if not self._asking:
                continue
            asking, self._asking = self._asking, {}
            generation = self._generation
            try:
                found = await asyncio.to_thread(self._ask, list(asking))
            except Exception as exc:  # the database may be away: asked again at next message
                log.warning("dc09 provisioning lookup failed", extra={"error": repr(exc)})
                continue
            if len(self._known) + len(asking) > KNOWN_MAX:
                self._known = {}
            for sender, at in asking.items():
                if generation == self._generation:  # else asked again at its next message
                    self._known[sender] = sender in found
                if sender in found and sender[0] not in self.links:
                    self._link(sender, at)

    def _ask(self, senders: list[dc09.Sender]) -> set[dc09.Sender]:
        with self._engine.connect() as conn:
            return dc09.provisioned(conn, senders)

    def _link(self, sender: dc09.Sender, at: int) -> Link:
        account, receiver, line = sender
        link = self.links[account] = Link(account, at, receiver, line)
        log.info("dc09 account supervised", extra={"dc09_account": account})
        self._added(account)
        self._gauge_added()
        return link

    def reported(self, account: str, receiver: str, line: str) -> None:
        """An ACKed message from ``account``: it is alive (and, when provisioned, supervised
        from now on)."""
        link = self.links.get(account)
        now = now_us()
        if link is None:
            sender = (account, receiver, line)
            if not self._provisioned(sender, now):
                return
            link = self._link(sender, now)
        link.last_message_us, link.receiver, link.line = now, receiver, line
        self._touched(account)
        if link.failed:
            link.failed = False
            self._tell(link, "restored")

    def check(self, now: int) -> None:
        """Mark the accounts that missed their interval failed (once each); an account whose
        supervision was turned off is no longer failed."""
        for account, link in self.links.items():
            overdue = self._overdue(account, link, now)
            if overdue != link.failed and (overdue or self.interval_s(account) == 0):
                link.failed = overdue
                self._touched(account)
                self._tell(link, "failed" if overdue else "restored")

    def _tell(self, link: Link, change: str) -> None:
        self._turned()
        level = logging.WARNING if change == "failed" else logging.INFO
        log.log(level, f"dc09 account {change}", extra={"dc09_account": link.account})
        self._gauges()

    def persisting(self, keys: set[str]) -> Callable[[Connection], None]:
        rows = [
            dc09.Reported(x.account, x.last_message_us, x.receiver, x.line, x.failed)
            for x in (self.links[a] for a in keys)
        ]
        return lambda conn: dc09.persist(conn, rows)
