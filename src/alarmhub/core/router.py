"""The router: what each stored signal becomes (a pending alarm, a history event, a restoral),
and the alarms the system raises itself. Pure rules over a repository the store provides.

Every history event records its path in PR_CHECKSUM (one of ``Path``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Protocol

from alarmhub.contactid import EVENTS
from alarmhub.core.alarm_types import (
    FAIL_TO_TEST,
    OPERATOR_HANDLED,
    RUNAWAY,
    SYSTEM_HANDLED,
    UNKNOWN_ACCOUNT,
    AlarmType,
    SystemAlarm,
)
from alarmhub.core.line_mask import apply_mask
from alarmhub.core.runaway import RunawayMonitor, Verdict

TEST_REPORT = "602"
HIST_TEXT_MAX = 80
SECOND_ZONE_IS = {"zone": "Z", "user": "U", "none": "N"}


class Path(StrEnum):
    """PR_CHECKSUM: the way a history event took through the router."""

    PENDING = "PENDING"  # an operator-handled event: a pending alarm was raised
    HISTORY = "HISTORY"  # a system-handled event: history only
    RESTORE = "RESTORE"  # a restoral (R code), linked to the open alarm it restores, if any
    RUNAWAY = "RUNAWAY"  # the account is in runaway: history only
    UNKNOWN = "UNKNOWN"  # unknown dnis, unfitting panel or unknown account: an alarm for it
    SYSTEM = "SYSTEM"  # an alarm the system raised itself, or its restoral
    OPERATOR = "OPERATOR"  # an operator's action on an alarm


@dataclass(frozen=True, slots=True)
class StoredSignal:
    """A committed signal waiting to be routed."""

    incident_number: int
    source: str
    destination: str
    dnis: str
    panel: str
    code: str
    area: str
    zone: str
    received_us: int


@dataclass(frozen=True, slots=True)
class Alarm:
    """An alarm entering the pending queue."""

    alarm_id: int
    account_number: str
    type: str
    priority: str
    color: str
    hist_text: str
    path: Path
    received_us: int
    code: str = ""
    area: str = ""
    zone: str = ""
    source: str = ""
    destination: str = ""
    dnis: str = ""
    panel: str = ""

    @property
    def event_code(self) -> str:
        return self.code[1:]


@dataclass(frozen=True, slots=True)
class HistoryEvent:
    """One event of account history, with the fields of XMHIST (spec 2.3)."""

    account_number: str
    incident_number: int
    received_us: int
    type: str
    alarm_category: str
    priority: str
    color: str
    hist_text: str
    path: Path
    second_zone_is: str = "N"
    code: str = ""
    area: str = ""
    zone: str = ""
    alarm_id: int | None = None
    opr: str | None = None
    source: str = ""
    destination: str = ""
    dnis: str = ""
    panel: str = ""

    @property
    def event_code(self) -> str:
        return self.code[1:]


class Repository(Protocol):
    """What the router reads and writes; the store implements it inside one transaction."""

    def line_mask(self, dnis: str) -> str | None: ...
    def account_exists(self, account_number: str) -> bool: ...
    def alarm_type(self, event_code: str) -> AlarmType: ...
    def open_alarm(
        self, account_number: str, event_code: str, area: str, zone: str
    ) -> int | None: ...
    def new_incident_number(self) -> int: ...
    def add_alarm(self, alarm: Alarm, pending_us: int) -> None: ...
    def add_history(self, event: HistoryEvent) -> None: ...
    def restore_arrived(self, alarm_id: int, at_us: int) -> None: ...
    def test_report(self, account_number: str, at_us: int) -> int | None:
        """Record a test report; the FAIL TO TEST alarm it ends, if one was raised."""
        ...


def resolve_account(repo: Repository, dnis: str, panel: str) -> tuple[str, bool]:
    """The account number line masking gives (empty when it gives none) and whether the account
    exists in account data."""
    mask = repo.line_mask(dnis)
    if mask is None:
        return "", False
    number = apply_mask(mask, panel)
    if number is None:
        return "", False
    return number, repo.account_exists(number)


def runaway_key(account_number: str, dnis: str, panel: str) -> str:
    """Whose signals count together for runaway: the account line masking gives, or, when it
    gives none, the dnis and panel."""
    return account_number or f"?{dnis}/{panel}"


SIGNAL_PATHS = frozenset({"PENDING", "HISTORY", "RESTORE", "RUNAWAY", "UNKNOWN"})


def _cut(text: str) -> str:
    return text[:HIST_TEXT_MAX]


class Router:
    """Routes signals in incident-number order; holds the runaway windows between calls."""

    def __init__(self, runaway: RunawayMonitor) -> None:
        self.runaway = runaway

    def route(self, repo: Repository, signal: StoredSignal, now_us: int) -> None:
        account, known = resolve_account(repo, signal.dnis, signal.panel)
        event_code = signal.code[1:]
        qualifier = signal.code[0]
        event = EVENTS[event_code]
        alarm_type = repo.alarm_type(event_code)
        restore = qualifier != "E"
        event_text = event.restore_text if restore else event.event_text
        history = HistoryEvent(
            account_number=account,
            incident_number=signal.incident_number,
            received_us=signal.received_us,
            type=alarm_type.restore_type if restore else alarm_type.type,
            alarm_category=alarm_type.category,
            priority=alarm_type.priority,
            color=alarm_type.color,
            hist_text=_cut(alarm_type.text(event_text, signal.zone, signal.area)),
            path=Path.HISTORY,
            second_zone_is=SECOND_ZONE_IS[event.address],
            code=signal.code,
            area=signal.area,
            zone=signal.zone,
            source=signal.source,
            destination=signal.destination,
            dnis=signal.dnis,
            panel=signal.panel,
        )
        verdict = self.runaway.observe(
            runaway_key(account, signal.dnis, signal.panel), signal.received_us
        )
        if verdict is not Verdict.NORMAL:
            if verdict is Verdict.TRIGGERED:
                self.raise_alarm(
                    repo, RUNAWAY, account, f"{RUNAWAY.name} {self.runaway.text}", now_us, signal
                )
            repo.add_history(replace(history, path=Path.RUNAWAY))
            if known and signal.code == f"E{TEST_REPORT}":
                self._test_report(repo, account, signal.received_us, now_us)
            return
        if not known:
            priority = (
                alarm_type.priority
                if alarm_type.category == OPERATOR_HANDLED and not restore
                else UNKNOWN_ACCOUNT.priority
            )
            alarm = self._alarm_from(history, Path.UNKNOWN)
            alarm = replace(
                alarm,
                type=UNKNOWN_ACCOUNT.type,
                priority=min(priority, UNKNOWN_ACCOUNT.priority),
                color=UNKNOWN_ACCOUNT.color,
                hist_text=_cut(f"{UNKNOWN_ACCOUNT.name} {history.hist_text}"),
            )
            repo.add_alarm(alarm, now_us)
            repo.add_history(
                replace(
                    history,
                    type=alarm.type,
                    priority=alarm.priority,
                    color=alarm.color,
                    hist_text=alarm.hist_text,
                    alarm_category=OPERATOR_HANDLED,
                    path=Path.UNKNOWN,
                    alarm_id=alarm.alarm_id,
                )
            )
            return
        if qualifier == "P":  # a status report of a condition still present: history only
            repo.add_history(history)
            return
        if restore:
            linked = None
            restoral = qualifier == "R" and alarm_type.category == OPERATOR_HANDLED
            if restoral:
                linked = repo.open_alarm(account, event_code, signal.area, signal.zone)
                if linked is not None:
                    repo.restore_arrived(linked, signal.received_us)
            path = Path.RESTORE if restoral else Path.HISTORY
            repo.add_history(replace(history, path=path, alarm_id=linked))
            return
        if alarm_type.category == SYSTEM_HANDLED:
            repo.add_history(history)
            if event_code == TEST_REPORT:
                ended = repo.test_report(account, signal.received_us)
                if ended is not None:
                    self.restore_alarm(
                        repo, FAIL_TO_TEST, ended, account, FAIL_TO_TEST.name, now_us
                    )
            return
        alarm = self._alarm_from(history, Path.PENDING)
        repo.add_alarm(alarm, now_us)
        repo.add_history(replace(history, path=Path.PENDING, alarm_id=alarm.alarm_id))

    def _test_report(self, repo: Repository, account: str, at_us: int, now_us: int) -> None:
        """A periodic test report arrived: it ends the account's FAIL TO TEST alarm, if any."""
        ended = repo.test_report(account, at_us)
        if ended is not None:
            self.restore_alarm(repo, FAIL_TO_TEST, ended, account, FAIL_TO_TEST.name, now_us)

    @staticmethod
    def _alarm_from(history: HistoryEvent, path: Path) -> Alarm:
        return Alarm(
            alarm_id=history.incident_number,
            account_number=history.account_number,
            type=history.type,
            priority=history.priority,
            color=history.color,
            hist_text=history.hist_text,
            path=path,
            received_us=history.received_us,
            code=history.code,
            area=history.area,
            zone=history.zone,
            source=history.source,
            destination=history.destination,
            dnis=history.dnis,
            panel=history.panel,
        )

    @staticmethod
    def raise_alarm(
        repo: Repository,
        kind: SystemAlarm,
        account: str,
        text: str,
        now_us: int,
        signal: StoredSignal | None = None,
    ) -> int:
        """Raise one of the system's own alarms: a pending alarm and its history event."""
        number = repo.new_incident_number()
        history = HistoryEvent(
            account_number=account,
            incident_number=number,
            received_us=now_us,
            type=kind.type,
            alarm_category=OPERATOR_HANDLED,
            priority=kind.priority,
            color=kind.color,
            hist_text=_cut(text),
            path=Path.SYSTEM,
            alarm_id=number,
            source=signal.source if signal else "",
            destination=signal.destination if signal else "",
            dnis=signal.dnis if signal else "",
            panel=signal.panel if signal else "",
        )
        repo.add_alarm(Router._alarm_from(history, Path.SYSTEM), now_us)
        repo.add_history(history)
        return number

    @staticmethod
    def restore_alarm(
        repo: Repository,
        kind: SystemAlarm,
        alarm_id: int | None,
        account: str,
        text: str,
        now_us: int,
    ) -> None:
        """The condition behind a system alarm has ended: a restoral in history, linked."""
        if alarm_id is not None:
            repo.restore_arrived(alarm_id, now_us)
        repo.add_history(
            HistoryEvent(
                account_number=account,
                incident_number=repo.new_incident_number(),
                received_us=now_us,
                type=kind.type,
                alarm_category=OPERATOR_HANDLED,
                priority=kind.priority,
                color=kind.color,
                hist_text=_cut(f"{text} RESTORE"),
                path=Path.SYSTEM,
                alarm_id=alarm_id,
            )
        )
