"""The DC-09 accounts on a node: keys and line mappings (following provisioning changes), and
supervision (each account's last message in memory, written in batches like heartbeats).

An account that has reported is supervised from then on, across restarts. No ACKed message
within its interval marks it failed at once in the database, where the writer process raises
COMMUNICATION FAILURE; its next message marks it reporting again (the restoral). After a start
every account gets a full interval before it can fail.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cryptography.fernet import Fernet
from sqlalchemy import Connection
from sqlalchemy.engine import Engine

from alarmhub import metrics
from alarmhub.clock import now_us
from alarmhub.store import dc09
from alarmhub.store.following import FollowsProvisioning
from alarmhub.store.leadership import Leadership
from alarmhub.store.writer import SignalWriter
from alarmhub.supervised import BatchedSupervision

log = logging.getLogger("alarmhub.dc09")


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

    # provisioning -------------------------------------------------------------------------

    def refresh(self, conn: Connection) -> None:
        self._lines = dc09.lines(conn)
        self._setups = dc09.setups(conn, self._station_key)

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

    # supervision --------------------------------------------------------------------------

    def recall(self, conn: Connection) -> None:
        """Supervise every account that ever reported; each gets a full interval from now."""
        started = now_us()
        for row in self.stored(conn):
            self.links[row.account] = Link(
                row.account, max(row.last_message_us, started), row.receiver, row.line, row.failed
            )
        self._gauges()

    def stored(self, conn: Connection) -> Sequence[dc09.Reported]:
        return dc09.reported(conn)

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

    async def stop(self) -> None:
        await super().stop()
        await self._stop_loops()

    def reported(self, account: str, receiver: str, line: str) -> None:
        """An ACKed message from ``account``: it is alive (and supervised from now on)."""
        link = self.links.get(account)
        now = now_us()
        if link is None:
            link = self.links[account] = Link(account, now, receiver, line)
            log.info("dc09 account supervised", extra={"dc09_account": account})
            self._gauges()
        link.last_message_us, link.receiver, link.line = now, receiver, line
        self._touched(account)
        if link.failed:
            link.failed = False
            self._tell(link, "restored")

    def check(self, now: int) -> None:
        """Mark the accounts that missed their interval failed (once each); an account whose
        supervision was turned off is no longer failed."""
        for account, link in self.links.items():
            interval = self.interval_s(account)
            overdue = interval > 0 and now - link.last_message_us > interval * 1_000_000
            if overdue != link.failed and (overdue or interval == 0):
                link.failed = overdue
                self._touched(account)
                self._tell(link, "failed" if overdue else "restored")

    def _tell(self, link: Link, change: str) -> None:
        self._turned()
        level = logging.WARNING if change == "failed" else logging.INFO
        log.log(level, f"dc09 account {change}", extra={"dc09_account": link.account})
        self._gauges()

    def _gauges(self) -> None:
        metrics.DC09_ACCOUNTS_SUPERVISED.set(len(self.links))
        metrics.DC09_ACCOUNTS_FAILED.set(sum(1 for x in self.links.values() if x.failed))

    def persisting(self, keys: set[str]) -> Callable[[Connection], None]:
        rows = [
            dc09.Reported(x.account, x.last_message_us, x.receiver, x.line, x.failed)
            for x in (self.links[a] for a in keys)
        ]
        return lambda conn: dc09.persist(conn, rows)
