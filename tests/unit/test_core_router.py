"""The pure router (``alarmhub.core.router``), runaway counting, supervision rules and the
shipped alarm types, over an in-memory repository (decisions §3 values, §4 line masking).

The fake repository below implements the router's ``Repository`` protocol with plain dicts; it
exists only for these unit tests of core rules. The store's implementation over SQLite is
tested in ``test_processing.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest

from alarmhub.contactid import EVENTS
from alarmhub.core import supervision
from alarmhub.core.alarm_types import (
    DEFAULTS,
    FAIL_TO_TEST,
    HIST_TEXT_MAX,
    OPERATOR_HANDLED,
    RUNAWAY,
    SOURCE_FAILURE,
    SYSTEM_HANDLED,
    UNKNOWN_ACCOUNT,
    AlarmType,
    alarm_type_problem,
)
from alarmhub.core.on_test import Test
from alarmhub.core.operations import AlarmState
from alarmhub.core.router import (
    HistoryEvent,
    Repository,
    RoutePath,
    Router,
    StoredSignal,
)
from alarmhub.core.runaway import RunawayMonitor, RunawayVerdict
from alarmhub.core.supervision import PairState

T0 = 1_700_000_000_000_000  # a fixed time, in microseconds
SECOND = 1_000_000
MINUTE = 60 * SECOND
DNIS = "D1"
MASK = "70####"
PANEL = "12"
ACCOUNT = "700012"  # MASK + PANEL


@dataclass
class FakeRepository:
    """The router's repository in memory: what one routing transaction would read and write."""

    masks: dict[str, str] = field(default_factory=lambda: {DNIS: MASK})
    accounts: set[str] = field(default_factory=lambda: {ACCOUNT, "700013"})
    alarm_types: dict[str, AlarmType] = field(default_factory=lambda: dict(DEFAULTS))
    alarms: dict[int, HistoryEvent] = field(default_factory=dict)
    pending_us: dict[int, int] = field(default_factory=dict)
    restored_us: dict[int, int] = field(default_factory=dict)
    history: list[HistoryEvent] = field(default_factory=list)
    last_incident: int = 1000
    test_alarm: dict[str, int] = field(default_factory=dict)
    last_test_us: dict[str, int] = field(default_factory=dict)
    closed: set[int] = field(default_factory=set)  # alarms resolved by an operator
    zones: dict[str, dict[tuple[str, str], str]] = field(default_factory=dict)
    users: dict[str, dict[str, str]] = field(default_factory=dict)
    storm_types: frozenset[str] = frozenset()
    states: dict[int, AlarmState] = field(default_factory=dict)
    scheduled: set[str] = field(default_factory=set)
    open_closes: list[tuple[str, str, str, bool, int, int]] = field(default_factory=list)
    tests: dict[str, Test] = field(default_factory=dict)  # the accounts on test

    def line_mask(self, dnis: str) -> str | None:
        return self.masks.get(dnis)

    def account_exists(self, account_number: str) -> bool:
        return account_number in self.accounts

    def alarm_type(self, event_code: str) -> AlarmType:
        return self.alarm_types[event_code]

    def descriptions(
        self, account_number: str, number: str
    ) -> tuple[dict[tuple[str, str], str], dict[str, str]]:
        return self.zones.get(account_number, {}), self.users.get(account_number, {})

    def open_alarm(self, account_number: str, event_code: str, area: str, zone: str) -> int | None:
        for alarm_id in sorted(self.alarms, reverse=True):
            a = self.alarms[alarm_id]
            if alarm_id not in self.restored_us and (
                a.account_number,
                a.event_code,
                a.area,
                a.zone,
            ) == (account_number, event_code, area, zone):
                return alarm_id
        return None

    def open_unknown_alarm(self, source: str, destination: str) -> int | None:
        for alarm_id in sorted(self.alarms, reverse=True):
            a = self.alarms[alarm_id]
            if (
                alarm_id not in self.closed
                and a.path is RoutePath.UNKNOWN
                and (a.source, a.destination) == (source, destination)
            ):
                return alarm_id
        return None

    def join_alarm(self, alarm_id: int, priority: str) -> None:
        alarm = self.alarms[alarm_id]
        alarm.priority = min(alarm.priority, priority)

    def new_incident_number(self) -> int:
        self.last_incident += 1
        return self.last_incident

    def add_alarm(
        self, alarm: HistoryEvent, pending_us: int, state: AlarmState = AlarmState.PENDING
    ) -> None:
        assert alarm.incident_number not in self.alarms, "an alarm id given out twice"
        self.alarms[alarm.incident_number] = alarm
        self.pending_us[alarm.incident_number] = pending_us
        self.states[alarm.incident_number] = state

    def add_history(self, event: HistoryEvent) -> None:
        self.history.append(event)

    def restore_arrived(self, alarm_id: int, at_us: int) -> None:
        self.restored_us.setdefault(alarm_id, at_us)

    def test_report(self, account_number: str, at_us: int) -> int | None:
        self.last_test_us[account_number] = at_us
        return self.test_alarm.pop(account_number, None)

    def on_test(self, account_number: str) -> Test | None:
        return self.tests.get(account_number)

    def has_schedule(self, account_number: str) -> bool:
        return account_number in self.scheduled

    def open_close(
        self, account_number: str, area: str, user: str, opening: bool, at_us: int, incident: int
    ) -> None:
        self.open_closes.append((account_number, area, user, opening, at_us, incident))

    # helpers of the tests ---------------------------------------------------------------------

    def signal(
        self,
        code: str,
        *,
        panel: str = PANEL,
        dnis: str = DNIS,
        area: str = "01",
        zone: str = "015",
        at_us: int = T0,
    ) -> StoredSignal:
        """A committed signal: it takes the next incident number, as the store's commit does."""
        return StoredSignal(
            incident_number=self.new_incident_number(),
            source="site1",
            destination="rx1",
            dnis=dnis,
            panel=panel,
            code=code,
            area=area,
            zone=zone,
            received_us=at_us,
        )

    def events_of(self, incident_number: int) -> list[HistoryEvent]:
        return [e for e in self.history if e.incident_number == incident_number]


def _check_protocol(repo: FakeRepository) -> Repository:
    return repo  # mypy: the fake implements the protocol


@pytest.fixture
def repo() -> FakeRepository:
    return FakeRepository()


@pytest.fixture
def router() -> Router:
    return Router(RunawayMonitor(limit=10, minutes=2))


def route(router: Router, repo: FakeRepository, sig: StoredSignal) -> HistoryEvent:
    """Route ``sig`` and return the one history event that carries its incident number."""
    router.route(repo, sig, sig.received_us + 1000)
    events = repo.events_of(sig.incident_number)
    assert len(events) == 1, events
    return events[0]


# operator-handled events: a pending alarm and its history event -------------------------------


def test_burglary_of_a_known_account_raises_a_pending_alarm(
    router: Router, repo: FakeRepository
) -> None:
    sig = repo.signal("E130", area="01", zone="015")
    router.route(repo, sig, T0 + 5)
    assert list(repo.alarms) == [sig.incident_number]
    alarm = repo.alarms[sig.incident_number]
    assert alarm.account_number == ACCOUNT
    assert (alarm.type, alarm.priority, alarm.color) == ("BURG", "C", "CF")
    assert alarm.hist_text == "BURGLARY ZONE 015"
    assert alarm.path is RoutePath.PENDING
    assert (alarm.code, alarm.event_code, alarm.area, alarm.zone) == ("E130", "130", "01", "015")
    assert (alarm.source, alarm.destination, alarm.dnis, alarm.panel) == (
        "site1",
        "rx1",
        DNIS,
        PANEL,
    )
    assert alarm.received_us == T0
    assert repo.pending_us[alarm.incident_number] == T0 + 5

    assert len(repo.history) == 1
    event = repo.history[0]
    assert event.incident_number == sig.incident_number
    assert event.alarm_id == sig.incident_number
    assert event.path is RoutePath.PENDING
    assert event.account_number == ACCOUNT
    assert (event.type, event.priority, event.color) == ("BURG", "C", "CF")
    assert event.alarm_category == OPERATOR_HANDLED
    assert event.hist_text == "BURGLARY ZONE 015"
    assert event.second_zone_is == "Z"
    assert (event.code, event.event_code, event.area, event.zone) == ("E130", "130", "01", "015")
    assert event.received_us == T0


@pytest.mark.parametrize(
    ("code", "zone", "second_zone_is", "hist_text"),
    [
        ("E130", "015", "Z", "BURGLARY ZONE 015"),  # the address is a zone
        ("E110", "003", "Z", "FIRE ZONE 003"),
        ("E121", "007", "U", "DURESS USER 007"),  # the address is a user
        ("E401", "004", "U", "O/C BY USER 004"),
        ("E750", "000", "N", "USER ASSIGNED"),  # no address
        ("E342", "000", "N", "MODULE AC LOSS"),
    ],
)
def test_history_fields_come_from_the_alarm_type_and_event(
    router: Router, repo: FakeRepository, code: str, zone: str, second_zone_is: str, hist_text: str
) -> None:
    event = route(router, repo, repo.signal(code, zone=zone))
    expected = DEFAULTS[code[1:]]
    assert event.second_zone_is == second_zone_is
    assert event.hist_text == hist_text
    assert (event.type, event.priority, event.color, event.alarm_category) == (
        expected.type,
        expected.priority,
        expected.color,
        expected.category,
    )


@pytest.mark.parametrize("code", ["E401", "E602", "E570"])
def test_system_handled_event_goes_to_history_only(
    router: Router, repo: FakeRepository, code: str
) -> None:
    event = route(router, repo, repo.signal(code, zone="001"))
    assert repo.alarms == {}
    assert event.path is RoutePath.HISTORY
    assert event.alarm_id is None
    assert event.alarm_category == SYSTEM_HANDLED
    assert event.priority == "z"
    assert event.account_number == ACCOUNT


def test_opening_text_and_type(router: Router, repo: FakeRepository) -> None:
    event = route(router, repo, repo.signal("E401", zone="121"))
    assert (event.type, event.hist_text, event.second_zone_is) == ("OPEN", "O/C BY USER 121", "U")


# restorals -----------------------------------------------------------------------------------


def test_restore_links_to_the_open_alarm_and_marks_it(router: Router, repo: FakeRepository) -> None:
    alarm_sig = repo.signal("E130", zone="015", at_us=T0)
    router.route(repo, alarm_sig, T0)
    restore_sig = repo.signal("R130", zone="015", at_us=T0 + 7 * SECOND)
    event = route(router, repo, restore_sig)
    assert event.path is RoutePath.RESTORE
    assert event.alarm_id == alarm_sig.incident_number
    assert event.hist_text == "BURGLARY RESTORE ZONE 015"
    assert event.type == "BURG"
    assert repo.restored_us == {alarm_sig.incident_number: T0 + 7 * SECOND}
    assert list(repo.alarms) == [alarm_sig.incident_number], "a restore raises no alarm"


def test_restore_links_to_the_newest_open_alarm_once(router: Router, repo: FakeRepository) -> None:
    first = repo.signal("E130", at_us=T0)
    second = repo.signal("E130", at_us=T0 + SECOND)
    router.route(repo, first, T0)
    router.route(repo, second, T0)
    one = route(router, repo, repo.signal("R130", at_us=T0 + 2 * SECOND))
    two = route(router, repo, repo.signal("R130", at_us=T0 + 3 * SECOND))
    three = route(router, repo, repo.signal("R130", at_us=T0 + 4 * SECOND))
    assert (one.alarm_id, two.alarm_id, three.alarm_id) == (
        second.incident_number,
        first.incident_number,
        None,
    )


def test_restore_without_open_alarm_is_unlinked(router: Router, repo: FakeRepository) -> None:
    event = route(router, repo, repo.signal("R130"))
    assert event.path is RoutePath.RESTORE
    assert event.alarm_id is None
    assert repo.alarms == {}
    assert repo.restored_us == {}


@pytest.mark.parametrize(
    ("code", "area", "zone", "panel"),
    [
        ("R130", "01", "016", PANEL),  # another zone
        ("R130", "02", "015", PANEL),  # another area
        ("R131", "01", "015", PANEL),  # another event code
        ("R130", "01", "015", "13"),  # another account
    ],
)
def test_restore_of_something_else_does_not_restore(
    router: Router, repo: FakeRepository, code: str, area: str, zone: str, panel: str
) -> None:
    alarm_sig = repo.signal("E130", area="01", zone="015")
    router.route(repo, alarm_sig, T0)
    event = route(router, repo, repo.signal(code, area=area, zone=zone, panel=panel))
    assert event.path is RoutePath.RESTORE
    assert event.alarm_id is None
    assert repo.restored_us == {}


def test_openings_and_closings_of_a_scheduled_account_are_recorded_for_its_checks(
    router: Router, repo: FakeRepository
) -> None:
    repo.scheduled = {ACCOUNT}
    opening = route(router, repo, repo.signal("E401", area="02", zone="003", at_us=T0))
    route(router, repo, repo.signal("R441", zone="004", at_us=T0 + SECOND))
    route(router, repo, repo.signal("P401", zone="004"))  # a status report: neither
    route(router, repo, repo.signal("E130"))  # not an open/close event
    route(router, repo, repo.signal("E401", panel="13"))  # an account with no schedule
    route(router, repo, repo.signal("E401", panel="9999"))  # an unknown account
    assert repo.open_closes == [
        (ACCOUNT, "02", "003", True, T0, opening.incident_number),
        (ACCOUNT, "01", "004", False, T0 + SECOND, opening.incident_number + 1),
    ]
    assert opening.path is RoutePath.HISTORY  # routed as it always was


def test_closing_is_history_with_the_restore_type(router: Router, repo: FakeRepository) -> None:
    opening = route(router, repo, repo.signal("E401", zone="002"))
    closing = route(router, repo, repo.signal("R401", zone="002"))
    assert opening.type == "OPEN"
    assert closing.type == "CLOSE"
    assert closing.path is RoutePath.HISTORY
    assert closing.alarm_id is None
    assert repo.alarms == {}


# unknown accounts ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dnis", "panel", "account"),
    [
        ("D9", "12", ""),  # the dnis is not registered
        (DNIS, "12345", ""),  # the panel does not fit the mask's four positions
        (DNIS, "99", "700099"),  # masked, but not in account data
    ],
)
def test_unknown_account_becomes_an_alarm_carrying_everything(
    router: Router, repo: FakeRepository, dnis: str, panel: str, account: str
) -> None:
    sig = repo.signal("E130", dnis=dnis, panel=panel, area="03", zone="044")
    event = route(router, repo, sig)
    assert list(repo.alarms) == [sig.incident_number]
    alarm = repo.alarms[sig.incident_number]
    assert alarm.type == UNKNOWN_ACCOUNT.type == "UNKN"
    assert alarm.hist_text.startswith("UNKNOWN ACCOUNT")
    assert alarm.hist_text == "UNKNOWN ACCOUNT BURGLARY ZONE 044"
    assert alarm.color == UNKNOWN_ACCOUNT.color
    assert alarm.path is RoutePath.UNKNOWN
    assert alarm.account_number == account
    assert (alarm.dnis, alarm.panel, alarm.code, alarm.area, alarm.zone) == (
        dnis,
        panel,
        "E130",
        "03",
        "044",
    )
    assert (alarm.source, alarm.destination) == ("site1", "rx1")
    assert event.path is RoutePath.UNKNOWN
    assert event.alarm_id == sig.incident_number
    assert (event.type, event.hist_text, event.priority) == (
        alarm.type,
        alarm.hist_text,
        alarm.priority,
    )
    assert (event.dnis, event.panel, event.code) == (dnis, panel, "E130")


@pytest.mark.parametrize(
    ("code", "priority"),
    [
        ("E110", "A"),  # a fire keeps the fire's priority
        ("E120", "B"),
        ("E130", "C"),
        ("E401", UNKNOWN_ACCOUNT.priority),  # a system-handled code: the default priority
        ("R110", UNKNOWN_ACCOUNT.priority),  # a restore: the default priority
        ("E300", UNKNOWN_ACCOUNT.priority),  # trouble G is not above UNKNOWN ACCOUNT's G
    ],
)
def test_unknown_account_priority(
    router: Router, repo: FakeRepository, code: str, priority: str
) -> None:
    sig = repo.signal(code, dnis="D9")
    route(router, repo, sig)
    assert repo.alarms[sig.incident_number].priority == priority


def test_unknown_account_fire_sorts_before_unknown_account_opening(
    router: Router, repo: FakeRepository
) -> None:
    fire = repo.signal("E110", dnis="D9")
    opening = repo.signal("E401", dnis="D9")
    router.route(repo, opening, T0)
    router.route(repo, fire, T0)
    assert (
        repo.alarms[fire.incident_number].priority < repo.alarms[opening.incident_number].priority
    )


# runaway -------------------------------------------------------------------------------------


def test_runaway_raises_one_alarm_then_history_only(router: Router, repo: FakeRepository) -> None:
    paths = []
    for n in range(10):
        paths.append(route(router, repo, repo.signal("E130", at_us=T0 + n * SECOND)).path)
    assert paths == [RoutePath.PENDING] * 10
    assert len(repo.alarms) == 10

    eleventh = repo.signal("E130", at_us=T0 + 10 * SECOND)
    event = route(router, repo, eleventh)
    assert event.path is RoutePath.RUNAWAY
    assert event.alarm_id is None
    assert eleventh.incident_number not in repo.alarms
    runaways = [a for a in repo.alarms.values() if a.type == RUNAWAY.type]
    assert len(runaways) == 1
    runaway = runaways[0]
    assert runaway.type == "RUNAW"
    assert runaway.hist_text == "RUNAWAY 10 SIGS IN 2 MIN"
    assert runaway.account_number == ACCOUNT
    assert runaway.path is RoutePath.SYSTEM
    system = repo.events_of(runaway.alarm_id)
    assert [(e.path, e.alarm_id, e.hist_text) for e in system] == [
        (RoutePath.SYSTEM, runaway.alarm_id, "RUNAWAY 10 SIGS IN 2 MIN")
    ]
    assert runaway.alarm_id != eleventh.incident_number

    alarms_before = len(repo.alarms)
    for n in range(11, 20):
        suppressed = route(router, repo, repo.signal("E110", at_us=T0 + n * SECOND))
        assert suppressed.path is RoutePath.RUNAWAY
    assert len(repo.alarms) == alarms_before, "further signals raise nothing"

    # two quiet minutes after the last signal: the account is routed normally again
    back = repo.signal("E130", at_us=T0 + 19 * SECOND + 2 * MINUTE)
    assert route(router, repo, back).path is RoutePath.PENDING
    assert back.incident_number in repo.alarms


def test_runaway_quiet_time_counts_from_the_last_signal(
    router: Router, repo: FakeRepository
) -> None:
    for n in range(11):
        route(router, repo, repo.signal("E130", at_us=T0 + n * SECOND))
    last = T0 + 10 * SECOND
    almost = repo.signal("E130", at_us=last + 2 * MINUTE - 1)
    assert route(router, repo, almost).path is RoutePath.RUNAWAY
    still = repo.signal("E130", at_us=almost.received_us + 2 * MINUTE - 1)
    assert route(router, repo, still).path is RoutePath.RUNAWAY
    back = repo.signal("E130", at_us=still.received_us + 2 * MINUTE)
    assert route(router, repo, back).path is RoutePath.PENDING
    assert sum(1 for a in repo.alarms.values() if a.type == RUNAWAY.type) == 1


def test_signals_spread_over_more_than_the_window_never_run_away(
    router: Router, repo: FakeRepository
) -> None:
    step = 12 * SECOND  # eleven signals span exactly two minutes: the first has left the window
    paths = {route(router, repo, repo.signal("E130", at_us=T0 + n * step)).path for n in range(40)}
    assert paths == {RoutePath.PENDING}
    assert not [a for a in repo.alarms.values() if a.type == RUNAWAY.type]


def test_runaway_windows_are_per_account(router: Router, repo: FakeRepository) -> None:
    for n in range(10):
        for panel in ("12", "13"):
            sig = repo.signal("E130", panel=panel, at_us=T0 + n * SECOND)
            assert route(router, repo, sig).path is RoutePath.PENDING
    assert not [a for a in repo.alarms.values() if a.type == RUNAWAY.type]
    route(router, repo, repo.signal("E130", panel="12", at_us=T0 + 11 * SECOND))
    other = route(router, repo, repo.signal("E130", panel="13", at_us=T0 + 11 * SECOND))
    runaways = [a for a in repo.alarms.values() if a.type == RUNAWAY.type]
    assert [a.account_number for a in runaways] == [ACCOUNT, "700013"]
    assert other.path is RoutePath.RUNAWAY


def test_runaway_of_an_unknown_panel_is_counted_per_dnis_and_panel(
    router: Router, repo: FakeRepository
) -> None:
    for n in range(10):
        assert route(router, repo, repo.signal("E130", dnis="D9", at_us=T0 + n)).path is (
            RoutePath.UNKNOWN
        )
    assert (
        route(router, repo, repo.signal("E130", dnis="D8", at_us=T0 + 10)).path is RoutePath.UNKNOWN
    )
    eleventh = repo.signal("E130", dnis="D9", at_us=T0 + 11)
    assert route(router, repo, eleventh).path is RoutePath.RUNAWAY
    runaways = [a for a in repo.alarms.values() if a.type == RUNAWAY.type]
    assert len(runaways) == 1
    assert (runaways[0].dnis, runaways[0].panel, runaways[0].account_number) == ("D9", PANEL, "")


# system alarms -------------------------------------------------------------------------------


def test_test_report_ends_a_fail_to_test_alarm(router: Router, repo: FakeRepository) -> None:
    ftt = Router.raise_alarm(repo, FAIL_TO_TEST, ACCOUNT, FAIL_TO_TEST.name, T0)
    repo.test_alarm[ACCOUNT] = ftt
    sig = repo.signal("E602", zone="000", at_us=T0 + MINUTE)
    router.route(repo, sig, T0 + MINUTE + 5)
    report = repo.events_of(sig.incident_number)
    assert [(e.path, e.type, e.alarm_id) for e in report] == [(RoutePath.HISTORY, "TEST", None)]
    restorals = [e for e in repo.history if e.alarm_id == ftt and e.incident_number != ftt]
    assert len(restorals) == 1
    restoral = restorals[0]
    assert restoral.path is RoutePath.SYSTEM
    assert restoral.type == "FTT"
    assert restoral.hist_text == "FAIL TO TEST RESTORE"
    assert restoral.account_number == ACCOUNT
    assert restoral.incident_number > sig.incident_number
    assert repo.restored_us == {ftt: T0 + MINUTE + 5}
    assert repo.last_test_us == {ACCOUNT: T0 + MINUTE}


def test_test_report_without_a_fail_to_test_alarm(router: Router, repo: FakeRepository) -> None:
    sig = repo.signal("E602", zone="000")
    router.route(repo, sig, T0)
    assert [e.path for e in repo.history] == [RoutePath.HISTORY]
    assert repo.last_test_us == {ACCOUNT: T0}


def test_raise_alarm_source_failure(repo: FakeRepository) -> None:
    before = repo.new_incident_number()
    number = Router.raise_alarm(repo, SOURCE_FAILURE, "", "SOURCE FAILURE site1:rx1", T0)
    assert number > before
    alarm = repo.alarms[number]
    assert (alarm.type, alarm.priority, alarm.color, alarm.path) == (
        "SRCFL",
        SOURCE_FAILURE.priority,
        SOURCE_FAILURE.color,
        RoutePath.SYSTEM,
    )
    assert alarm.hist_text == "SOURCE FAILURE site1:rx1"  # the pair keeps its case
    assert repo.pending_us[number] == T0
    assert [(e.incident_number, e.alarm_id, e.path, e.type) for e in repo.history] == [
        (number, number, RoutePath.SYSTEM, "SRCFL")
    ]
    second = Router.raise_alarm(repo, SOURCE_FAILURE, "", "SOURCE FAILURE site2:rx1", T0)
    assert second > number

    Router.restore_alarm(repo, SOURCE_FAILURE, number, "", "SOURCE FAILURE site1:rx1", T0 + 9)
    restoral = repo.history[-1]
    assert restoral.incident_number > second
    assert (restoral.alarm_id, restoral.path) == (number, RoutePath.SYSTEM)
    assert restoral.hist_text == "SOURCE FAILURE site1:rx1 RESTORE"
    assert repo.restored_us == {number: T0 + 9}


@pytest.mark.parametrize("dnis", [DNIS, "D9"])
def test_history_text_is_cut_to_the_column(router: Router, repo: FakeRepository, dnis: str) -> None:
    template = "{event}" * 8  # 56 characters; 'Loss Of Supervision RF' eight times is 176
    assert len(template) <= HIST_TEXT_MAX
    repo.alarm_types["381"] = replace(DEFAULTS["381"], hist_text=template)
    sig = repo.signal("E381", dnis=dnis)
    event = route(router, repo, sig)
    assert len(event.hist_text) == 80
    assert event.hist_text.startswith("UNKNOWN ACCOUNT LOSS" if dnis == "D9" else "LOSS OF")
    assert repo.alarms[sig.incident_number].hist_text == event.hist_text


def test_overridden_alarm_type_is_used(router: Router, repo: FakeRepository) -> None:
    repo.alarm_types["130"] = replace(
        DEFAULTS["130"], type="INTR", priority="B", category=SYSTEM_HANDLED
    )
    event = route(router, repo, repo.signal("E130"))
    assert (event.type, event.priority, event.path) == ("INTR", "B", RoutePath.HISTORY)
    assert repo.alarms == {}


# core.runaway directly -----------------------------------------------------------------------


def test_runaway_monitor_window_edges() -> None:
    monitor = RunawayMonitor(limit=3, minutes=1)
    assert monitor.text == "3 SIGS IN 1 MIN"
    for n in range(3):
        assert monitor.observe("a", T0 + n * 20 * SECOND) is RunawayVerdict.NORMAL
    # exactly one minute after the first: the first has left the window
    assert monitor.observe("a", T0 + MINUTE) is RunawayVerdict.NORMAL

    edge = RunawayMonitor(limit=3, minutes=1)
    for n in range(3):
        assert edge.observe("b", T0 + n * 20 * SECOND) is RunawayVerdict.NORMAL
    assert edge.observe("b", T0 + MINUTE - 1) is RunawayVerdict.TRIGGERED
    assert edge.observe("b", T0 + MINUTE) is RunawayVerdict.SUPPRESSED
    assert edge.observe("b", T0 + 2 * MINUTE - 1) is RunawayVerdict.SUPPRESSED
    assert edge.observe("b", T0 + 3 * MINUTE - 1) is RunawayVerdict.NORMAL
    # the window starts empty after a runaway ends
    assert edge.observe("b", T0 + 3 * MINUTE) is RunawayVerdict.NORMAL
    assert edge.observe("b", T0 + 3 * MINUTE + 1) is RunawayVerdict.NORMAL
    assert edge.observe("b", T0 + 3 * MINUTE + 2) is RunawayVerdict.TRIGGERED


def test_runaway_monitor_triggers_once_per_episode() -> None:
    monitor = RunawayMonitor(limit=2, minutes=1)
    verdicts = [monitor.observe("a", T0 + n) for n in range(10)]
    assert verdicts.count(RunawayVerdict.TRIGGERED) == 1
    assert verdicts[:3] == [RunawayVerdict.NORMAL, RunawayVerdict.NORMAL, RunawayVerdict.TRIGGERED]
    assert set(verdicts[3:]) == {RunawayVerdict.SUPPRESSED}


def test_runaway_monitor_forget_quiet() -> None:
    monitor = RunawayMonitor(limit=2, minutes=1)
    for n in range(3):
        monitor.observe("loud", T0 + n)
    monitor.observe("quiet", T0)
    monitor.forget_quiet(T0 + 2 + MINUTE - 1)
    # nobody has been quiet for a whole minute yet: the runaway state is kept
    assert monitor.observe("loud", T0 + 2 + MINUTE - 1) is RunawayVerdict.SUPPRESSED
    monitor.forget_quiet(T0 + 2 + 2 * MINUTE - 2)
    assert set(monitor._accounts) == {"loud"}  # bounded memory: "quiet" is dropped
    monitor.forget_quiet(T0 + 2 + 3 * MINUTE)
    assert monitor._accounts == {}
    assert monitor.observe("loud", T0 + 2 + 3 * MINUTE) is RunawayVerdict.NORMAL


@pytest.mark.parametrize(("limit", "minutes"), [(0, 2), (10, 0), (-1, 1)])
def test_runaway_monitor_refuses_non_positive_settings(limit: int, minutes: int) -> None:
    with pytest.raises(ValueError, match="positive"):
        RunawayMonitor(limit, minutes)


# core.supervision ----------------------------------------------------------------------------


def test_test_overdue_boundary() -> None:
    due = (3600 + 600) * SECOND
    overdue = supervision.test_overdue
    assert not overdue(T0, 3600, 600, T0)
    assert not overdue(T0, 3600, 600, T0 + due)
    assert overdue(T0, 3600, 600, T0 + due + 1)
    assert overdue(T0, 1, 0, T0 + SECOND + 1)
    assert not overdue(T0, 1, 0, T0 + SECOND)


def test_pair_overdue_boundary() -> None:
    pair = PairState("site1", "rx1", last_seen_us=T0, timeout_s=60)
    assert not pair.overdue(T0 + MINUTE)
    assert pair.overdue(T0 + MINUTE + 1)


# core.alarm_types ----------------------------------------------------------------------------


def test_defaults_cover_every_contact_id_event() -> None:
    assert len(EVENTS) == 322
    assert set(DEFAULTS) == set(EVENTS)
    for code, alarm_type in DEFAULTS.items():
        assert alarm_type.code == code
        assert alarm_type_problem(alarm_type) is None, code


def test_default_priorities_follow_nfpa_order() -> None:
    fire, panic, burglary, trouble = (DEFAULTS[c].priority for c in ("110", "120", "130", "300"))
    assert fire < panic < burglary < trouble
    operator = [t.priority for t in DEFAULTS.values() if t.category == OPERATOR_HANDLED]
    system = [t.priority for t in DEFAULTS.values() if t.category == SYSTEM_HANDLED]
    assert operator and system
    assert max(operator) < min(system), "every system-handled row sorts after operator-handled"
    # the system's own alarms are operator-handled troubles: not above a fire
    for kind in (UNKNOWN_ACCOUNT, RUNAWAY, SOURCE_FAILURE, FAIL_TO_TEST):
        assert fire < kind.priority < min(system)


def test_priority_order_is_plain_ascii() -> None:
    assert sorted(["a", "Z", "A", "!", "z"]) == ["!", "A", "Z", "a", "z"]
    for priority in ("!", "A", "Z", "a", "~"):
        assert alarm_type_problem(replace(DEFAULTS["130"], priority=priority)) is None


@pytest.mark.parametrize(
    ("changes", "word"),
    [
        ({"type": "burg"}, "type"),
        ({"type": "BURGLR"}, "type"),
        ({"type": ""}, "type"),
        ({"restore_type": "B-1"}, "type"),
        ({"priority": "AB"}, "priority"),
        ({"priority": ""}, "priority"),
        ({"priority": " "}, "priority"),
        ({"priority": "\x7f"}, "priority"),
        ({"priority": "é"}, "priority"),
        ({"color": "4G"}, "color"),
        ({"color": "4"}, "color"),
        ({"color": "4f"}, "color"),
        ({"category": "X"}, "category"),
        ({"hist_text": ""}, "hist_text"),
        ({"hist_text": "X" * (HIST_TEXT_MAX + 1)}, "hist_text"),
        ({"hist_text": "{event} {account}"}, "hist_text"),
        ({"hist_text": "{0}"}, "hist_text"),
        ({"hist_text": "{event"}, "hist_text"),
    ],
)
def test_alarm_type_problem_refuses(changes: dict[str, str], word: str) -> None:
    problem = alarm_type_problem(replace(DEFAULTS["130"], **changes))  # type: ignore[arg-type]
    assert problem is not None
    assert problem.startswith(word)


def test_alarm_type_problem_accepts_the_longest_text() -> None:
    text = "{event} " + "X" * (HIST_TEXT_MAX - len("{event} "))
    assert alarm_type_problem(replace(DEFAULTS["130"], hist_text=text)) is None


def test_fake_repository_implements_the_protocol(repo: FakeRepository) -> None:
    assert _check_protocol(repo) is repo


# qualifier P, test reports in runaway, unknown-account category -------------------------------


def test_status_report_qualifier_p_is_history_only(router: Router, repo: FakeRepository) -> None:
    alarm_sig = repo.signal("E130")
    router.route(repo, alarm_sig, T0)
    event = route(router, repo, repo.signal("P130", at_us=T0 + SECOND))
    assert event.path is RoutePath.HISTORY
    assert event.alarm_id is None
    assert alarm_sig.incident_number not in repo.restored_us  # a status report restores nothing


def test_test_report_counts_even_while_the_account_is_in_runaway(
    router: Router, repo: FakeRepository
) -> None:
    repo.test_alarm[ACCOUNT] = 4242
    for n in range(11):  # the eleventh signal puts the account in runaway
        router.route(repo, repo.signal("E401", at_us=T0 + n * SECOND), T0 + n * SECOND)
    report = repo.signal("E602", at_us=T0 + 20 * SECOND)
    router.route(repo, report, T0 + 20 * SECOND)
    assert repo.events_of(report.incident_number)[0].path is RoutePath.RUNAWAY
    assert repo.last_test_us[ACCOUNT] == T0 + 20 * SECOND
    assert repo.restored_us.get(4242) == T0 + 20 * SECOND  # its FAIL TO TEST is restored


def test_unknown_account_history_is_operator_handled(router: Router, repo: FakeRepository) -> None:
    event = route(router, repo, repo.signal("E401", dnis="NOPE"))
    assert event.path is RoutePath.UNKNOWN
    assert event.alarm_category == "O"  # it raised a pending alarm, whatever the code's category


# response data (decisions section 7) --------------------------------------------------------


def test_a_zone_s_description_follows_the_text_of_alarm_and_restoral(
    router: Router, repo: FakeRepository
) -> None:
    repo.zones[ACCOUNT] = {("015", ""): "BACK DOOR"}
    alarm = repo.signal("E130", area="01", zone="015")
    router.route(repo, alarm, T0)
    restoral = repo.signal("R130", area="01", zone="015")
    router.route(repo, restoral, T0)
    assert repo.alarms[alarm.incident_number].hist_text == "BURGLARY ZONE 015 BACK DOOR"
    assert [e.hist_text for e in repo.history] == [
        "BURGLARY ZONE 015 BACK DOOR",
        "BURGLARY RESTORE ZONE 015 BACK DOOR",
    ]


def test_a_panel_user_s_name_follows_an_opening(router: Router, repo: FakeRepository) -> None:
    repo.users[ACCOUNT] = {"002": "JOHN SMITH"}
    repo.zones[ACCOUNT] = {("002", ""): "NOT A ZONE HERE"}
    router.route(repo, repo.signal("R401", area="01", zone="002"), T0)
    assert repo.history[-1].second_zone_is == "U"
    assert repo.history[-1].hist_text.endswith(" JOHN SMITH")


def test_a_signal_without_data_or_of_an_unknown_account_keeps_its_text(
    router: Router, repo: FakeRepository
) -> None:
    router.route(repo, repo.signal("E130", area="01", zone="016"), T0)
    assert repo.history[-1].hist_text == "BURGLARY ZONE 016"
    repo.zones["709999"] = {("015", ""): "BACK DOOR"}
    router.route(repo, repo.signal("E130", area="01", zone="015", panel="9999"), T0)
    assert "BACK DOOR" not in repo.history[-1].hist_text


def test_hist_text_with_a_description_is_cut_to_80_characters(
    router: Router, repo: FakeRepository
) -> None:
    repo.zones[ACCOUNT] = {("015", ""): "D" * 40}
    repo.alarm_types["130"] = replace(repo.alarm_types["130"], hist_text="X" * 60)
    router.route(repo, repo.signal("E130", area="01", zone="015"), T0)
    assert repo.history[-1].hist_text == "X" * 60 + " " + "D" * 19


# storm mode (core.storm): by TYPE, to the storm list instead of pending ------------------------


def test_an_alarm_of_a_storm_type_goes_to_the_storm_list(
    router: Router, repo: FakeRepository
) -> None:
    repo.storm_types = frozenset({"ACPWR"})
    event = route(router, repo, repo.signal("E301", zone="000"))  # AC power loss
    assert event.type == "ACPWR"
    assert event.path is RoutePath.STORM
    assert event.alarm_category == OPERATOR_HANDLED
    assert event.alarm_id == event.incident_number
    assert repo.states[event.incident_number] is AlarmState.STORM
    assert repo.alarms[event.incident_number].path is RoutePath.STORM


def test_the_same_account_s_alarm_of_another_type_still_pends(
    router: Router, repo: FakeRepository
) -> None:
    repo.storm_types = frozenset({"ACPWR"})
    stormed = route(router, repo, repo.signal("E301", zone="000"))
    burglary = route(router, repo, repo.signal("E130", zone="015"))
    assert stormed.account_number == burglary.account_number == ACCOUNT
    assert burglary.path is RoutePath.PENDING
    assert repo.states[burglary.incident_number] is AlarmState.PENDING
    assert repo.states[stormed.incident_number] is AlarmState.STORM


def test_a_restoral_links_to_the_alarm_on_the_storm_list(
    router: Router, repo: FakeRepository
) -> None:
    repo.storm_types = frozenset({"ACPWR"})
    stormed = route(router, repo, repo.signal("E301", zone="000"))
    restoral = route(router, repo, repo.signal("R301", zone="000"))
    assert restoral.path is RoutePath.RESTORE
    assert restoral.alarm_id == stormed.incident_number
    assert stormed.incident_number in repo.restored_us


def test_a_system_alarm_of_a_storm_type_goes_to_the_storm_list_keeping_its_path(
    repo: FakeRepository,
) -> None:
    repo.storm_types = frozenset({FAIL_TO_TEST.type})
    number = Router.raise_alarm(repo, FAIL_TO_TEST, ACCOUNT, FAIL_TO_TEST.name, T0)
    assert repo.states[number] is AlarmState.STORM
    assert repo.events_of(number)[0].path is RoutePath.SYSTEM
    other = Router.raise_alarm(repo, SOURCE_FAILURE, "", SOURCE_FAILURE.name, T0)
    assert repo.states[other] is AlarmState.PENDING


def test_unknown_accounts_pend_whatever_is_in_storm_mode(
    router: Router, repo: FakeRepository
) -> None:
    repo.storm_types = frozenset({"ACPWR", UNKNOWN_ACCOUNT.type})
    event = route(router, repo, repo.signal("E301", panel="99", zone="000"))
    assert event.path is RoutePath.UNKNOWN
    assert repo.states[event.alarm_id or 0] is AlarmState.PENDING


# on test (core.on_test; decisions §9) ---------------------------------------------------------


def _on_test(
    repo: FakeRepository, zones: tuple[str, ...] = (), types: tuple[str, ...] = ()
) -> None:
    repo.tests[ACCOUNT] = Test(ACCOUNT, frozenset(zones), frozenset(types), T0, T0 + 60 * MINUTE)


def test_a_matching_signal_of_an_account_on_test_goes_to_history_only(
    router: Router, repo: FakeRepository
) -> None:
    _on_test(repo, zones=("015",))
    event = route(router, repo, repo.signal("E130", zone="015", at_us=T0 + SECOND))
    assert (event.path, event.alarm_category, event.type) == (RoutePath.ON_TEST, "S", "BURG")
    assert event.alarm_id is None
    assert repo.alarms == {}
    assert repo.last_test_us[ACCOUNT] == T0 + SECOND  # the periodic test timer is satisfied


def test_a_signal_outside_the_test_pends_as_always(router: Router, repo: FakeRepository) -> None:
    _on_test(repo, zones=("015",), types=("BURG",))
    other_zone = route(router, repo, repo.signal("E130", zone="016", at_us=T0 + SECOND))
    other_type = route(router, repo, repo.signal("E110", zone="015", at_us=T0 + SECOND))
    before = route(router, repo, repo.signal("E130", zone="015", at_us=T0 - SECOND))
    after = route(router, repo, repo.signal("E130", zone="015", at_us=T0 + 61 * MINUTE))
    assert [e.path for e in (other_zone, other_type, before, after)] == [RoutePath.PENDING] * 4
    assert ACCOUNT not in repo.last_test_us


def test_a_restoral_on_test_restores_the_alarm_raised_before_the_test(
    router: Router, repo: FakeRepository
) -> None:
    alarm = route(router, repo, repo.signal("E130", zone="015", at_us=T0 - MINUTE))
    _on_test(repo, types=("BURG",))  # a restoral matches by the TYPE of its event
    restoral = route(router, repo, repo.signal("R130", zone="015", at_us=T0 + SECOND))
    assert (restoral.path, restoral.alarm_id) == (RoutePath.ON_TEST, alarm.incident_number)
    assert repo.restored_us[alarm.incident_number] == T0 + SECOND


def test_the_test_report_of_an_account_on_test_ends_its_fail_to_test_alarm(
    router: Router, repo: FakeRepository
) -> None:
    repo.test_alarm[ACCOUNT] = 999
    _on_test(repo)
    route(router, repo, repo.signal("E130", at_us=T0 + SECOND))
    restorals = [e for e in repo.history if e.type == FAIL_TO_TEST.type]
    assert [(e.alarm_id, e.hist_text) for e in restorals] == [(999, "FAIL TO TEST RESTORE")]


def test_runaway_does_not_count_the_signals_of_an_account_on_test(repo: FakeRepository) -> None:
    router = Router(RunawayMonitor(limit=3, minutes=2))
    _on_test(repo, zones=("001",))
    for _ in range(10):
        route(router, repo, repo.signal("E130", zone="001", at_us=T0 + SECOND))
    for zone in ("002", "003", "004"):  # three alarms: at the limit, not beyond it
        route(router, repo, repo.signal("E130", zone=zone, at_us=T0 + SECOND))
    assert sorted(a.zone for a in repo.alarms.values()) == ["002", "003", "004"]
    assert not [e for e in repo.history if e.path is RoutePath.RUNAWAY]
