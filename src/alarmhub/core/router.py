"""The router: what each stored signal becomes (a pending alarm, a history event, a restoral),
and the alarms the system raises itself. Pure rules over a repository the store provides.

Every history event records its path in PR_CHECKSUM (one of ``RoutePath``).

Storm mode (``core.storm``): a signal's alarm whose TYPE is in storm mode goes to the storm list,
not to pending, and its event's path is STORM; an alarm the system raises itself goes there by
the same rule and keeps the path SYSTEM (XMHIST's SERVICEONLY=Y still finds it), the alarm's
state saying where it went.

On test (``core.on_test``): a signal of a known account on test that matches the test goes to
history only (ALARM_CATEGORY S, path ONTEST), before runaway sees it (runaway does not count it);
nothing pends, a restoral still marks the alarm it restores, and the periodic test timer is
satisfied.

Unknown accounts: a signal whose account is unknown raises an UNKNOWN ACCOUNT alarm, except that
a DC-09 or receiver link signal (destination in ``JOINING_DESTINATIONS``) joins the UNKNOWN
ACCOUNT alarm still open on its receiver line (its ``source``), as one more of its signals: a
flood of unknown senders on one line is one alarm, each of its signals still an event of
history.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from alarmhub.contactid import EVENTS
from alarmhub.core import dc09, on_test, receiver_links, response, schedules, storm, system_alarms
from alarmhub.core.alarm_types import (
    FAIL_TO_TEST,
    OPERATOR_HANDLED,
    RUNAWAY,
    SYSTEM_HANDLED,
    UNKNOWN_ACCOUNT,
    AlarmType,
    SystemAlarm,
    cut_text,
)
from alarmhub.core.line_mask import apply_mask
from alarmhub.core.operations import AlarmState
from alarmhub.core.runaway import RunawayMonitor, RunawayVerdict
from alarmhub.core.signal import Signal

TEST_REPORT = "602"
SECOND_ZONE_IS = {"zone": "Z", "user": "U", "none": "N"}
JOINING_DESTINATIONS = frozenset(
    {dc09.DESTINATION, receiver_links.DESTINATION}
)  # a receiver line's unknown accounts: one alarm


class RoutePath(StrEnum):
    """PR_CHECKSUM: the way a history event took through the router."""

    PENDING = "PENDING"  # an operator-handled event: a pending alarm was raised
    HISTORY = "HISTORY"  # a system-handled event: history only
    RESTORE = "RESTORE"  # a restoral (R code), linked to the open alarm it restores, if any
    RUNAWAY = "RUNAWAY"  # the account is in runaway: history only
    UNKNOWN = "UNKNOWN"  # unknown dnis, unfitting panel or unknown account: an alarm for it
    SYSTEM = "SYSTEM"  # an alarm the system raised itself, or its restoral
    OPERATOR = "OPERATOR"  # an operator's action on an alarm
    STORM = "STORM"  # an operator-handled event whose TYPE is in storm mode: the storm list
    ON_TEST = "ONTEST"  # the account is on test and the signal matches the test: history only
    API = "API"  # a change made through the integrator API: its audit record, naming the key


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

    @classmethod
    def of(cls, incident_number: int, signal: Signal) -> StoredSignal:
        """``signal`` as stored under ``incident_number``."""
        f = signal.fields
        return cls(
            incident_number, signal.source, signal.destination, f.dnis, f.panel, f.code,
            f.area, f.zone, signal.received_us,
        )  # fmt: skip


@dataclass(slots=True)  # not frozen: a frozen dataclass is built field by field, 30 % slower
class HistoryEvent:
    """One event of account history, with the fields of XMHIST (spec 2.3). An event that
    raises an alarm also describes the alarm: its ``alarm_id`` is the event's incident
    number, and its ``path`` says why it was raised (PENDING, UNKNOWN or SYSTEM)."""

    account_number: str
    incident_number: int
    received_us: int
    type: str
    alarm_category: str
    priority: str
    color: str
    hist_text: str
    path: RoutePath
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
    def descriptions(
        self, account_number: str, number: str
    ) -> tuple[Mapping[tuple[str, str], str], Mapping[str, str]]:
        """What the account's data says of a zone or user ``number``: its zone descriptions
        by (zone, area) and its panel users' names by number (at least those of ``number``)."""
        ...

    def alarm_type(self, event_code: str) -> AlarmType: ...
    @property
    def storm_types(self) -> frozenset[str]:
        """The alarm TYPEs in storm mode."""
        ...

    def open_alarm(
        self, account_number: str, event_code: str, area: str, zone: str
    ) -> int | None: ...
    def open_unknown_alarm(self, source: str, destination: str) -> int | None:
        """The newest UNKNOWN ACCOUNT alarm of ``source``:``destination`` still open (pending,
        in process or on hold), if any."""
        ...

    def join_alarm(self, alarm_id: int, priority: str) -> None:
        """A signal joined the open alarm ``alarm_id``: it takes ``priority`` if more urgent."""
        ...

    def new_incident_number(self) -> int: ...
    def add_alarm(
        self, event: HistoryEvent, pending_us: int, state: AlarmState = AlarmState.PENDING
    ) -> None:
        """Put the alarm ``event`` raises into the pending queue (or the storm list)."""
        ...

    def add_history(self, event: HistoryEvent) -> None: ...
    def restore_arrived(self, alarm_id: int, at_us: int) -> None: ...
    def test_report(self, account_number: str, at_us: int) -> int | None:
        """Record a test report; the FAIL TO TEST alarm it ends, if one was raised."""
        ...

    def has_schedule(self, account_number: str) -> bool:
        """Whether the account has an open/close schedule (from the provisioning cache)."""
        ...

    def open_close(
        self, account_number: str, area: str, user: str, opening: bool, at_us: int, incident: int
    ) -> None:
        """Record an opening or closing of a scheduled account, to be judged at once."""
        ...

    def on_test(self, account_number: str) -> on_test.Test | None:
        """The account's running test, if it is on test."""
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


OPERATOR_RECORDS = frozenset({RoutePath.OPERATOR.value, RoutePath.API.value})
"""The paths of the records of people's actions (an operator's, an integrator API key's): records
of their own, which history shows with SEARCHTYPE=OPR only (decisions section 3)."""
SIGNAL_PATHS = frozenset(p.value for p in RoutePath) - OPERATOR_RECORDS - {RoutePath.SYSTEM.value}
"""The paths of a routed signal's history event (one event per signal)."""
RUNAWAY_PATHS = SIGNAL_PATHS - {RoutePath.ON_TEST.value}
"""The paths of the signals runaway counts: all but those of accounts on test."""


@dataclass(slots=True)
class _Kind:
    """What a signal's history event says, before its path is known."""

    type: str
    category: str
    priority: str
    color: str
    text: str
    second_zone_is: str


_RAISING = frozenset({RoutePath.PENDING, RoutePath.UNKNOWN, RoutePath.STORM})


def _event(
    signal: StoredSignal, account: str, kind: _Kind, path: RoutePath, alarm_id: int | None = None
) -> HistoryEvent:
    """The history event of a routed signal; one that raises an alarm links to it (the alarm
    takes the signal's incident number)."""
    return HistoryEvent(
        account_number=account,
        incident_number=signal.incident_number,
        received_us=signal.received_us,
        type=kind.type,
        alarm_category=kind.category,
        priority=kind.priority,
        color=kind.color,
        hist_text=kind.text,
        path=path,
        second_zone_is=kind.second_zone_is,
        code=signal.code,
        area=signal.area,
        zone=signal.zone,
        alarm_id=signal.incident_number if path in _RAISING else alarm_id,
        source=signal.source,
        destination=signal.destination,
        dnis=signal.dnis,
        panel=signal.panel,
    )


def is_restoral(signal: StoredSignal, alarm_type: AlarmType) -> bool:
    """Whether ``signal`` restores an operator-handled condition (an R of such a type): only
    then is an open alarm looked for."""
    return signal.code[0] == "R" and alarm_type.category == OPERATOR_HANDLED


def _link_restoral(repo: Repository, account: str, signal: StoredSignal) -> int | None:
    """The open alarm a restoral restores, marked restored; None when none is open."""
    linked = repo.open_alarm(account, signal.code[1:], signal.area, signal.zone)
    if linked is not None:
        repo.restore_arrived(linked, signal.received_us)
    return linked


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
        text = alarm_type.text(
            event.restore_text if restore else event.event_text, signal.zone, signal.area
        )
        second_zone_is = SECOND_ZONE_IS[event.address]
        if known and second_zone_is != "N":  # the zone's description, the user's name
            zones, users = repo.descriptions(account, signal.zone)
            text = response.described(text, second_zone_is, signal.zone, signal.area, zones, users)
        text = cut_text(text)
        kind = _Kind(
            type=alarm_type.restore_type if restore else alarm_type.type,
            category=alarm_type.category,
            priority=alarm_type.priority,
            color=alarm_type.color,
            text=text,
            second_zone_is=second_zone_is,
        )
        if known and self._on_test(repo, signal, account, alarm_type, kind, now_us):
            return
        verdict = self.runaway.observe(
            runaway_key(account, signal.dnis, signal.panel), signal.received_us
        )
        if verdict is not RunawayVerdict.NORMAL:
            if verdict is RunawayVerdict.TRIGGERED:
                self.raise_alarm(
                    repo, RUNAWAY, account, system_alarms.runaway(self.runaway.text), now_us, signal
                )
            repo.add_history(_event(signal, account, kind, RoutePath.RUNAWAY))
            if known and signal.code == f"E{TEST_REPORT}":
                self._test_report(repo, account, signal.received_us, now_us)
            return
        if not known:
            priority = (
                alarm_type.priority
                if alarm_type.category == OPERATOR_HANDLED and not restore
                else UNKNOWN_ACCOUNT.priority
            )
            unknown = _Kind(
                type=UNKNOWN_ACCOUNT.type,
                category=OPERATOR_HANDLED,
                priority=min(priority, UNKNOWN_ACCOUNT.priority),
                color=UNKNOWN_ACCOUNT.color,
                text=cut_text(system_alarms.unknown_account(text)),
                second_zone_is=kind.second_zone_is,
            )
            history = _event(signal, account, unknown, RoutePath.UNKNOWN)
            if signal.destination in JOINING_DESTINATIONS:
                joined = repo.open_unknown_alarm(signal.source, signal.destination)
                if joined is not None:
                    history.alarm_id = joined
                    repo.join_alarm(joined, history.priority)
                    repo.add_history(history)
                    return
            self._raise(repo, history, now_us)
            return
        self._open_close(repo, account, signal)
        if qualifier == "P":  # a status report of a condition still present: history only
            repo.add_history(_event(signal, account, kind, RoutePath.HISTORY))
            return
        if restore:
            restoral = is_restoral(signal, alarm_type)
            linked = _link_restoral(repo, account, signal) if restoral else None
            path = RoutePath.RESTORE if restoral else RoutePath.HISTORY
            repo.add_history(_event(signal, account, kind, path, alarm_id=linked))
            return
        if alarm_type.category == SYSTEM_HANDLED:
            repo.add_history(_event(signal, account, kind, RoutePath.HISTORY))
            if event_code == TEST_REPORT:
                ended = repo.test_report(account, signal.received_us)
                if ended is not None:
                    self.restore_alarm(
                        repo, FAIL_TO_TEST, ended, account, FAIL_TO_TEST.name, now_us
                    )
            return
        storm_types = repo.storm_types
        if storm_types and storm.new_alarm_state(kind.type, storm_types) is AlarmState.STORM:
            stormed = _event(signal, account, kind, RoutePath.STORM)
            repo.add_alarm(stormed, now_us, AlarmState.STORM)
            repo.add_history(stormed)
            return
        self._raise(repo, _event(signal, account, kind, RoutePath.PENDING), now_us)

    @staticmethod
    def _open_close(repo: Repository, account: str, signal: StoredSignal) -> None:
        """An opening (E) or closing (R) of an account with a schedule is recorded for its
        checks (``core.schedules``); the signal is routed as any other."""
        if schedules.is_open_close(signal.code) and repo.has_schedule(account):
            opening = signal.code[0] == schedules.OPENING
            repo.open_close(
                account, signal.area, signal.zone, opening, signal.received_us,
                signal.incident_number,
            )  # fmt: skip

    @staticmethod
    def _raise(repo: Repository, history: HistoryEvent, now_us: int) -> None:
        """A signal that raises a pending alarm: the alarm (numbered as the signal) and its
        event."""
        repo.add_alarm(history, now_us)
        repo.add_history(history)

    def _on_test(
        self,
        repo: Repository,
        signal: StoredSignal,
        account: str,
        alarm_type: AlarmType,
        kind: _Kind,
        now_us: int,
    ) -> bool:
        """A signal of an account on test that matches the test (``core.on_test``) goes to
        history only (ALARM_CATEGORY S, path ONTEST), before runaway counts it; a restoral still
        marks the alarm it restores. It satisfies the periodic test timer. False when the
        signal is not on test."""
        test = repo.on_test(account)
        if (
            test is None
            or not test.covers(signal.received_us)
            or not on_test.matches(test, signal.zone, alarm_type.type)
        ):
            return False
        linked = _link_restoral(repo, account, signal) if is_restoral(signal, alarm_type) else None
        kind.category = SYSTEM_HANDLED
        repo.add_history(_event(signal, account, kind, RoutePath.ON_TEST, alarm_id=linked))
        self._test_report(repo, account, signal.received_us, now_us)
        return True

    def _test_report(self, repo: Repository, account: str, at_us: int, now_us: int) -> None:
        """A periodic test report arrived: it ends the account's FAIL TO TEST alarm, if any."""
        ended = repo.test_report(account, at_us)
        if ended is not None:
            self.restore_alarm(repo, FAIL_TO_TEST, ended, account, FAIL_TO_TEST.name, now_us)

    @staticmethod
    def raise_alarm(
        repo: Repository,
        kind: SystemAlarm,
        account: str,
        text: str,
        now_us: int,
        signal: StoredSignal | None = None,
    ) -> int:
        """Raise one of the system's own alarms: a pending alarm (or one on the storm list)
        and its history event."""
        number = repo.new_incident_number()
        history = HistoryEvent(
            account_number=account,
            incident_number=number,
            received_us=now_us,
            type=kind.type,
            alarm_category=OPERATOR_HANDLED,
            priority=kind.priority,
            color=kind.color,
            hist_text=cut_text(text),
            path=RoutePath.SYSTEM,
            alarm_id=number,
            source=signal.source if signal else "",
            destination=signal.destination if signal else "",
            dnis=signal.dnis if signal else "",
            panel=signal.panel if signal else "",
        )
        repo.add_alarm(history, now_us, storm.new_alarm_state(kind.type, repo.storm_types))
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
                hist_text=cut_text(f"{text} RESTORE"),
                path=RoutePath.SYSTEM,
                alarm_id=alarm_id,
            )
        )
