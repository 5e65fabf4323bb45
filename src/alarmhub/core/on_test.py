"""On test: the rules (decisions §9). While an account is on test (a technician works on its
panel) its signals that match the test (its zones and alarm TYPEs; none named: all) go to history
only, nothing pends and runaway does not count them. At the end time the account returns from
test by itself (or earlier, ``test stop``); a zone whose alarm was not restored during the test
then raises TEST END NOT RESTORED. Pure rules, no I/O: the store keeps the tests
(``store.on_test``) and routing applies :func:`matches` to every signal of a known account.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from alarmhub.core import units
from alarmhub.core.alarm_types import TEST_END_NOT_RESTORED, TYPE_PATTERN, AlarmType
from alarmhub.core.errors import ActionRefused

MINUTES_MAX = 10080
"""The longest test: a week."""
BY_MAX = 40
REASON_MAX = 200
ZONES_MAX = 100
"""At most this many zones on test at once (they are kept space-separated, 400 characters)."""
TYPES_MAX = 20
ZONE_DIGITS = 3
REFUSED = "OPS-TEST"
"""The code of every refusal of the on-test rules (console and command line)."""


@dataclass(frozen=True, slots=True)
class Test:
    """A running test of an account: its zones and alarm TYPEs (empty: all), from when to when."""

    __test__ = False  # not a test case (pytest collects classes named Test*)

    account: str
    zones: frozenset[str]
    types: frozenset[str]
    started_us: int
    ends_us: int

    def covers(self, at_us: int) -> bool:
        """A signal received at ``at_us`` falls within the test's time."""
        return self.started_us <= at_us < self.ends_us


def matches(test: Test, zone: str, alarm_type: str) -> bool:
    """A signal of ``zone`` whose alarm type's (event) TYPE is ``alarm_type`` is on test: its
    zone and its TYPE are on test (an empty set names all). A restoral matches by the TYPE of
    the event it restores, so it goes where its alarm went."""
    return (not test.zones or zone in test.zones) and (not test.types or alarm_type in test.types)


# checking a request ------------------------------------------------------------------------


def refused(message: str, status: int = 422) -> ActionRefused:
    return ActionRefused(REFUSED, message, status)


def check_minutes(minutes: object) -> int:
    """How long the test lasts: a whole number of minutes, 1 to a week."""
    if not isinstance(minutes, int) or isinstance(minutes, bool):
        raise refused("minutes must be a whole number")
    if not 1 <= minutes <= MINUTES_MAX:
        raise refused(f"minutes must be 1-{MINUTES_MAX} (up to a week), not {minutes}")
    return minutes


def check_zones(given: Iterable[str]) -> tuple[str, ...]:
    """The zones on test, as Contact ID writes them (``5`` is ``005``), each once, sorted."""
    zones = set()
    for raw in given:
        text = raw.strip()
        if not (text.isascii() and text.isdigit() and 1 <= len(text) <= ZONE_DIGITS):
            raise refused(f"invalid zone {raw[:20]!r}: 000-999 (1-3 digits)")
        zones.add(text.zfill(ZONE_DIGITS))
    if len(zones) > ZONES_MAX:
        raise refused(f"at most {ZONES_MAX} zones on test at once")
    return tuple(sorted(zones))


def check_types(given: Iterable[str]) -> tuple[str, ...]:
    """The alarm TYPEs on test, upper-cased, each once, sorted."""
    types = set()
    for raw in given:
        name = raw.strip().upper()
        if not TYPE_PATTERN.fullmatch(name):
            raise refused(f"invalid alarm TYPE {raw[:20]!r}: 1-5 letters or digits")
        types.add(name)
    if len(types) > TYPES_MAX:
        raise refused(f"at most {TYPES_MAX} alarm TYPEs on test at once")
    return tuple(sorted(types))


def check_station_has(types: Iterable[str], alarm_types: Iterable[AlarmType]) -> None:
    """Refuse a TYPE on test that no alarm type of the station gives its events (``alarmhub
    alarmtype list``): no signal could ever match it, and the account would show as on test
    while its signals still pend."""
    known = {t.type for t in alarm_types}
    unknown = [name for name in types if name not in known]
    if unknown:
        raise refused(f"no alarm TYPE {unknown[0]} at this station")


def check_by(by: str) -> str:
    """Who asked for the test (a technician, the customer): 1-40 printable characters."""
    text = by.strip()
    if not text:
        raise refused("name who asked for the test (by)")
    if len(text) > BY_MAX or not text.isprintable():
        raise refused(f"by must be 1-{BY_MAX} printable characters")
    return text


def check_reason(reason: str) -> str:
    text = reason.strip()
    if len(text) > REASON_MAX or not text.isprintable():
        raise refused(f"reason must be at most {REASON_MAX} printable characters")
    return text


def joined(items: Iterable[str]) -> str:
    """Zones or TYPEs as the store keeps them: space-separated."""
    return " ".join(items)


def split(text: str) -> tuple[str, ...]:
    """Zones or TYPEs as the store keeps them, one by one."""
    return tuple(text.split())


def ends_us(started_us: int, minutes: int) -> int:
    return started_us + units.minutes_us(minutes)


def minutes_left(ends: int, now_us: int) -> int:
    """Whole minutes until the return from test, rounded up (0 once it is due)."""
    return max(0, -(-(ends - now_us) // units.US_PER_MINUTE))


# the texts of history -----------------------------------------------------------------------

START_TYPE = "TSTON"
RETURN_TYPE = "TSTOF"
RETURN_TEXT = "RETURN FROM TEST"


def start_text(
    minutes: int, by: str, zones: Sequence[str], types: Sequence[str], reason: str
) -> str:
    """HIST_TEXT of putting an account on test: ``ON TEST 60 MIN BY J SMITH ZONES 003 005:
    SERVICE`` (the zones and TYPEs when the test names some, the reason when given)."""
    text = f"ON TEST {minutes} MIN BY {by}"
    if zones:
        text += " ZONES " + " ".join(zones)
    if types:
        text += " TYPES " + " ".join(types)
    if reason:
        text += f": {reason}"
    return text.upper()


def return_text(by: str | None) -> str:
    """HIST_TEXT of a return from test: automatic, or ``BY`` whoever stopped it."""
    return f"{RETURN_TEXT} BY {by}".upper() if by else RETURN_TEXT


def not_restored_text(zone: str, description: str | None) -> str:
    """TEST END NOT RESTORED ZONE 003, with the zone's description when the account has one."""
    text = f"{TEST_END_NOT_RESTORED.name} ZONE {zone}"
    return f"{text} {description.upper()}" if description else text


# the signals of a test ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TestSignal:
    """A signal received during a test: its code (``E130``), area, zone and receive time."""

    __test__ = False

    code: str
    area: str
    zone: str
    received_us: int


def restored(signals: Sequence[TestSignal]) -> list[bool]:
    """For each signal (oldest first): an event (E) was restored by a later R of the same event
    code, area and zone within the test; a restoral (R) itself, and a status report (P), count
    as restored."""
    answer = [True] * len(signals)
    open_events: dict[tuple[str, str, str], list[int]] = {}
    for i, signal in enumerate(signals):
        key = (signal.code[1:], signal.area, signal.zone)
        if signal.code.startswith("E"):
            answer[i] = False
            open_events.setdefault(key, []).append(i)
        elif signal.code.startswith("R"):
            for index in open_events.pop(key, []):
                answer[index] = True
    return answer


def left_open(
    signals: Sequence[TestSignal], restore_expected: Callable[[str], bool]
) -> list[tuple[str, str]]:
    """The TESTN rule: the (zone, area) pairs, sorted, whose last E event of an alarm type that
    expects a restore (``restore_expected(event_code)``) has no later R of the same event code,
    area and zone. ``signals`` are the test's, oldest first."""
    last: dict[tuple[str, str, str], bool] = {}  # (event code, area, zone): still open
    for signal in signals:
        key = (signal.code[1:], signal.area, signal.zone)
        if signal.code.startswith("E"):
            last[key] = True
        elif signal.code.startswith("R"):
            last[key] = False
    zones = {
        (zone, area)
        for (code, area, zone), still in last.items()
        if still and restore_expected(code)
    }
    return sorted(zones)


# what is printed (the command line's --json and the integrator API) --------------------------


def test_view(test: Mapping[str, Any]) -> dict[str, Any]:
    """A running test as the command line and the API show it: times as ISO 8601 UTC."""
    return {
        "account_number": test["account_number"],
        "company_name": test["company_name"],
        "zones": test["zones"],
        "types": test["types"],
        "by": test["by"],
        "reason": test["reason"],
        "started": units.iso_utc(test["started_us"]),
        "ends": units.iso_utc(test["ends_us"]),
        "minutes_left": test["minutes_left"],
    }


def signal_view(signal: Mapping[str, Any]) -> dict[str, Any]:
    """A signal of a test's report (``test report --json``): its time as ISO 8601 UTC."""
    shown = {k: v for k, v in signal.items() if k != "received_us"}
    return {**shown, "received": units.iso_utc(signal["received_us"])}
