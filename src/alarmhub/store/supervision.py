"""The supervision checks: FAIL TO TEST for accounts whose periodic test is overdue, SOURCE
FAILURE for heartbeat pairs that stopped, COMMUNICATION FAILURE for DC-09 accounts that stopped
reporting, RECEIVER LINK FAILURE for receiver links that went silent
(:func:`alarmhub.store.receivers.supervise`), AUTOMATION OUTPUT FAILURE for automation outputs
that cannot deliver (:func:`alarmhub.store.outputs.supervise`), and their restorals; the
open/close schedules whose checks are due (:mod:`alarmhub.store.schedules`); then held alarms
whose time is up go back to pending and pending alarms go to the operator working their account,
else to idle operators.

Each failure and each restoral is also an event of the outbox (``supervision.failed``,
``supervision.restored``), written with the alarms at the repository's flush.

Each supervision transaction first takes the incident counter's row lock
(:func:`~alarmhub.store.commit.lock_incidents`), as routing does, so that on a database shared
by several nodes they run one after the other.
"""

from __future__ import annotations

import logging
from datetime import UTC, tzinfo

from sqlalchemy import BigInteger, Connection, cast, func, select, update
from sqlalchemy.engine import Engine

from alarmhub.core import events, system_alarms, units
from alarmhub.core.alarm_types import COMMUNICATION_FAILURE, FAIL_TO_TEST, SOURCE_FAILURE
from alarmhub.core.dc09 import DESTINATION as DC09_DESTINATION
from alarmhub.core.dc09 import line_name
from alarmhub.core.line_mask import apply_mask
from alarmhub.core.outputs import (
    COMMUNICATION_FAILED,
    COMMUNICATION_RESTORED,
    OWN_AREA,
    OWN_ZONE,
    TEST_FAILED,
)
from alarmhub.core.router import Router, StoredSignal
from alarmhub.core.supervision import test_overdue
from alarmhub.store import dc09, handling, on_test, outputs, receivers, schedules, schema
from alarmhub.store.commit import lock_incidents
from alarmhub.store.provisioning_cache import ProvisioningCache
from alarmhub.store.repository import Inserts, SqlRepository

ACCOUNT = schema.account.c
DC09_ACCOUNT = schema.dc09_account.c
HEARTBEAT = schema.heartbeat.c

log = logging.getLogger("alarmhub.router")


class Supervision:
    """Runs the supervision checks; one per database writer."""

    def __init__(
        self,
        engine: Engine,
        test_grace_s: int,
        station_zone: tzinfo = UTC,
        cache: ProvisioningCache | None = None,
    ) -> None:
        self.cache = cache or ProvisioningCache()  # routing's own, where it runs beside it
        self._inserts = Inserts(engine)
        self._test_grace_s = test_grace_s
        self._station_zone = station_zone  # of schedules with no time zone of their own

    def supervise(self, conn: Connection, now_us: int, leader: bool = True) -> int:
        """Raise FAIL TO TEST, SOURCE FAILURE, COMMUNICATION FAILURE (DC-09), RECEIVER LINK
        FAILURE and AUTOMATION OUTPUT FAILURE alarms and their restorals, return held alarms
        whose time is up to pending, hand pending alarms to idle operators; how many changed."""
        lock_incidents(conn)
        self.cache.refresh(conn)
        repo = SqlRepository(conn, self.cache, self._inserts)
        changed = self._fail_to_test(conn, repo, now_us) + self._source_failures(conn, repo, now_us)
        changed += self._communication_failures(conn, repo, now_us)
        changed += receivers.supervise(conn, repo, now_us)
        changed += outputs.supervise(conn, repo, now_us)
        if leader:  # the open/close checks are the supervision leader's
            changed += schedules.check(conn, repo, now_us, self._station_zone)
        changed += on_test.return_due(conn, repo, now_us)  # tests whose time is up
        raised = repo.flush()
        changed += handling.end_holds(conn, now_us)
        changed += len(handling.hand_out(conn, now_us, arriving=raised))
        return changed

    def _fail_to_test(self, conn: Connection, repo: SqlRepository, now_us: int) -> int:
        last_test = func.coalesce(ACCOUNT.last_test_us, ACCOUNT.created_us)
        # the database keeps only the accounts that may be overdue; the rule decides
        rows = conn.execute(
            select(ACCOUNT.account_number, ACCOUNT.test_interval_s, last_test).where(
                ACCOUNT.test_interval_s.is_not(None),
                ACCOUNT.test_alarm_id.is_(None),
                last_test
                + cast(ACCOUNT.test_interval_s + self._test_grace_s, BigInteger)
                * units.US_PER_SECOND
                < now_us,
            )
        ).all()
        raised = 0
        for account, interval_s, last in rows:
            if not test_overdue(last, interval_s, self._test_grace_s, now_us):
                continue
            alarm_id = Router.raise_alarm(
                repo, FAIL_TO_TEST, account, system_alarms.fail_to_test(), now_us
            )
            conn.execute(
                update(schema.account)
                .where(ACCOUNT.account_number == account)
                .values(test_alarm_id=alarm_id)
            )
            repo.test_alarm_raised(account, alarm_id)
            if self.cache.outputs:
                panel = outputs.last_panel(conn, account)
                outputs.enqueue_event(conn, account, panel, TEST_FAILED, OWN_AREA, OWN_ZONE,
                                      now_us, self.cache.outputs, repo)  # fmt: skip
            data = events.supervision_data(FAIL_TO_TEST, account, alarm_id)
            repo.publish(events.SUPERVISION_FAILED, account, data, now_us)
            log.warning("fail to test", extra={"account": account, "incident_number": alarm_id})
            raised += 1
        return raised

    def _source_failures(self, conn: Connection, repo: SqlRepository, now_us: int) -> int:
        changed = 0
        failed = conn.execute(
            select(HEARTBEAT.source, HEARTBEAT.destination).where(
                HEARTBEAT.failed_us.is_not(None), HEARTBEAT.alarm_id.is_(None)
            )
        ).all()
        for source, destination in failed:
            text = system_alarms.source_failure(source, destination)
            alarm_id = Router.raise_alarm(repo, SOURCE_FAILURE, "", text, now_us)
            data = events.supervision_data(
                SOURCE_FAILURE, "", alarm_id, source=source, destination=destination
            )
            repo.publish(events.SUPERVISION_FAILED, "", data, now_us)
            conn.execute(
                update(schema.heartbeat)
                .where(HEARTBEAT.source == source, HEARTBEAT.destination == destination)
                .values(alarm_id=alarm_id)
            )
            log.warning(
                "source failure alarm",
                extra={"source": source, "destination": destination, "incident_number": alarm_id},
            )
            changed += 1
        back = conn.execute(
            select(HEARTBEAT.source, HEARTBEAT.destination, HEARTBEAT.alarm_id).where(
                HEARTBEAT.failed_us.is_(None), HEARTBEAT.alarm_id.is_not(None)
            )
        ).all()
        for source, destination, alarm_id in back:
            text = system_alarms.source_failure(source, destination)
            Router.restore_alarm(repo, SOURCE_FAILURE, alarm_id, "", text, now_us)
            data = events.supervision_data(
                SOURCE_FAILURE, "", alarm_id, source=source, destination=destination
            )
            repo.publish(events.SUPERVISION_RESTORED, "", data, now_us)
            conn.execute(
                update(schema.heartbeat)
                .where(HEARTBEAT.source == source, HEARTBEAT.destination == destination)
                .values(alarm_id=None)
            )
            changed += 1
        return changed

    def _communication_failures(self, conn: Connection, repo: SqlRepository, now_us: int) -> int:
        """COMMUNICATION FAILURE for each DC-09 account the node marked failed, and its restoral
        when the node marked it reporting again (as SOURCE FAILURE does for heartbeats). The
        alarm goes to the account that line masking gives the DC-09 account, if it exists."""
        failed = conn.execute(
            select(DC09_ACCOUNT.account, DC09_ACCOUNT.receiver, DC09_ACCOUNT.line).where(
                DC09_ACCOUNT.failed_us.is_not(None), DC09_ACCOUNT.alarm_id.is_(None)
            )
        ).all()
        back = conn.execute(
            select(
                DC09_ACCOUNT.account,
                DC09_ACCOUNT.receiver,
                DC09_ACCOUNT.line,
                DC09_ACCOUNT.alarm_id,
            ).where(DC09_ACCOUNT.failed_us.is_(None), DC09_ACCOUNT.alarm_id.is_not(None))
        ).all()
        if not failed and not back:
            return 0
        lines = dc09.lines(conn)
        for dc09_account, receiver, line in failed:
            dnis = lines.get((receiver, line), "")
            mask = self.cache.masks.get(dnis)
            number = apply_mask(mask, dc09_account) if mask is not None else None
            account = number if number and repo.account_exists(number) else ""
            self._forward(conn, repo, COMMUNICATION_FAILED, number or "", dc09_account, now_us)
            # where the alarm comes from, as an operator reads it on a signal's alarm
            where = line_name(receiver, line)
            origin = StoredSignal(
                0, where, DC09_DESTINATION, dnis, dc09_account, "", "", "", now_us
            )
            text = system_alarms.communication_failure(dc09_account, receiver, line)
            alarm_id = Router.raise_alarm(
                repo, COMMUNICATION_FAILURE, account, text, now_us, origin
            )
            data = events.supervision_data(
                COMMUNICATION_FAILURE, account, alarm_id,
                dc09_account=dc09_account, receiver=receiver, line=line,
            )  # fmt: skip
            repo.publish(events.SUPERVISION_FAILED, account, data, now_us)
            conn.execute(
                update(schema.dc09_account)
                .where(DC09_ACCOUNT.account == dc09_account)
                .values(alarm_id=alarm_id)
            )
            log.warning(
                "communication failure alarm",
                extra={"dc09_account": dc09_account, "incident_number": alarm_id},
            )
        for dc09_account, receiver, line, alarm_id in back:
            raised_on = conn.execute(
                select(schema.alarm.c.account_number).where(schema.alarm.c.alarm_id == alarm_id)
            ).scalar()
            dnis = lines.get((receiver, line), "")
            mask = self.cache.masks.get(dnis)
            number = apply_mask(mask, dc09_account) if mask is not None else None
            self._forward(conn, repo, COMMUNICATION_RESTORED, number or "", dc09_account, now_us)
            text = system_alarms.communication_failure(dc09_account, receiver, line)
            Router.restore_alarm(
                repo, COMMUNICATION_FAILURE, alarm_id, raised_on or "", text, now_us
            )
            data = events.supervision_data(
                COMMUNICATION_FAILURE, raised_on or "", alarm_id,
                dc09_account=dc09_account, receiver=receiver, line=line,
            )  # fmt: skip
            repo.publish(events.SUPERVISION_RESTORED, raised_on or "", data, now_us)
            conn.execute(
                update(schema.dc09_account)
                .where(DC09_ACCOUNT.account == dc09_account)
                .values(alarm_id=None)
            )
        return len(failed) + len(back)

    def _forward(
        self, conn: Connection, repo: SqlRepository, code: str, account: str, panel: str,
        now_us: int,
    ) -> None:  # fmt: skip
        """Queue ``code`` about the account for the automation outputs that want it."""
        if self.cache.outputs:
            outputs.enqueue_event(conn, account, panel, code, OWN_AREA, OWN_ZONE, now_us,
                                  self.cache.outputs, repo)  # fmt: skip
