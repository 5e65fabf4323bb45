"""Open/close schedules (decisions section 9): the windows of a local date, when late to open
and late to close fall due, and what an account's openings and closings raise or restore.
Pure rules: the clock (``*_us``) and the time zone are passed in; ``store.schedules`` writes.

Windows are in local time, minutes after midnight; a close at or before the open ends on the
next day. A window belongs to the local date it opens on. Local times become UTC through the
zone: a time in a spring-forward gap moves forward past the gap, an ambiguous one (fall back)
takes its first occurrence (``fold=0``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from enum import StrEnum

from alarmhub.core import units
from alarmhub.core.alarm_types import (
    EARLY_CLOSE,
    LATE_TO_CLOSE,
    LATE_TO_OPEN,
    UNSCHEDULED_OPEN,
    SystemAlarm,
)

OPEN_CLOSE_CODES = frozenset(
    {*(f"4{n:02d}" for n in range(1, 10)), "441", "442", *(f"4{n}" for n in range(50, 60))}
)
"""The DC-05 open/close events: E-qualified an opening, R-qualified a closing."""
OPENING, CLOSING = "E", "R"
DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
MINUTES_PER_DAY = 24 * 60
DEFAULT_GRACE_MIN = 0
MAX_GRACE_MIN = MINUTES_PER_DAY
LOOK_BACK_US = units.US_PER_DAY
"""Due moments older than this before the check are skipped (a node down for days)."""
LOOK_AHEAD_DAYS = 8
"""How far ahead the next due moment is looked for."""
_TIME = re.compile(r"([01]?\d|2[0-3]):([0-5]\d)")
HOLIDAY_NAME_MAX = 60
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")  # C0, DEL and C1: no place in a name


def is_open_close(code: str) -> bool:
    """Whether a signal's code (qualifier and event) is an opening or a closing."""
    return code[:1] in (OPENING, CLOSING) and code[1:] in OPEN_CLOSE_CODES


# parsing what people write -------------------------------------------------------------------


def parse_days(text: str) -> list[int]:
    """``mon``..``sun``, a range ``mon-fri`` (wrapping: ``fri-mon``) or a comma list of either,
    as weekday numbers (0 Monday); ValueError says what is wrong."""
    days: list[int] = []
    for part in text.lower().split(","):
        part = part.strip()
        first, dash, last = part.partition("-")
        if first.strip() not in DAYS or (dash and last.strip() not in DAYS):
            raise ValueError(f"day {part!r}: use mon..sun, a range (mon-fri) or a comma list")
        start = DAYS.index(first.strip())
        end = DAYS.index(last.strip()) if dash else start
        for step in range((end - start) % 7 + 1):
            day = (start + step) % 7
            if day not in days:
                days.append(day)
    return sorted(days)


def parse_time(text: str) -> int:
    """``HH:MM`` (24-hour) as minutes after midnight."""
    found = _TIME.fullmatch(text.strip())
    if not found:
        raise ValueError(f"time {text!r}: use HH:MM, 24-hour (e.g. 08:00, 18:30)")
    return int(found.group(1)) * 60 + int(found.group(2))


def holiday_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a holiday's name (too long, a control character, which a
    terminal would obey and PostgreSQL refuses as NUL), or None when it can."""
    if len(name) > HOLIDAY_NAME_MAX:
        return f"a holiday's name is at most {HOLIDAY_NAME_MAX} characters"
    if CONTROL.search(name):
        return "a holiday's name must not hold control characters"
    return None


def parse_date(text: str) -> date:
    """An ISO date ``YYYY-MM-DD``."""
    try:
        if len(text.strip()) != 10:
            raise ValueError
        return date.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"date {text!r}: use YYYY-MM-DD (e.g. 2026-12-25)") from None


def parse_area(text: str) -> str:
    """An area of a schedule: up to 2 letters or digits; '' the whole account."""
    area = text.strip()
    if area and (len(area) > 2 or not (area.isascii() and area.isalnum())):
        raise ValueError(f"area {text[:20]!r}: up to 2 letters or digits")
    return area


def hhmm(minute: int) -> str:
    return f"{minute // 60:02d}:{minute % 60:02d}"


def grace_problem(minutes: int) -> str | None:
    if not 0 <= minutes <= MAX_GRACE_MIN:
        return f"a grace is 0..{MAX_GRACE_MIN} minutes"
    return None


# the schedule of an account --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Window:
    """Open from ``open_min`` to ``close_min`` (minutes after local midnight)."""

    open_min: int
    close_min: int

    @property
    def across_midnight(self) -> bool:
        return self.close_min <= self.open_min


@dataclass(frozen=True, slots=True)
class Temporary:
    """A temporary schedule for ``first``..``last`` (dates): one window, or a closed day
    (``window`` None). Several rows may cover the same dates (several windows a day)."""

    first: date
    last: date
    window: Window | None


@dataclass(frozen=True, slots=True)
class Schedule:
    """An account's (or an area's) schedule and its settings."""

    zone: tzinfo
    weekly: Mapping[int, Sequence[Window]] = field(default_factory=dict)
    temporary: Sequence[Temporary] = ()
    holidays: frozenset[date] = frozenset()
    grace_min: int = DEFAULT_GRACE_MIN
    early_grace_min: int = 0
    late_to_open: bool = True
    late_to_close: bool = True
    early_close: bool = False


@dataclass(frozen=True, slots=True)
class DayWindow:
    """A window on a local date, with its UTC moments."""

    day: date
    window: Window
    open_us: int
    close_us: int


def local_us(day: date, minute: int, zone: tzinfo) -> int:
    """Local ``minute`` of ``day`` in ``zone`` as microseconds UTC: in a gap it moves forward
    past the gap, when ambiguous it is the first occurrence (fold 0)."""
    moment = datetime.combine(day, time(minute // 60, minute % 60), tzinfo=zone)
    return units.seconds_us(int(moment.timestamp()))


def local_date(at_us: int, zone: tzinfo) -> date:
    return datetime.fromtimestamp(units.to_seconds(at_us), UTC).astimezone(zone).date()


def start_of_day_us(at_us: int, zone: tzinfo) -> int:
    """The start of the local date of ``at_us``."""
    return local_us(local_date(at_us, zone), 0, zone)


def windows_of(schedule: Schedule, day: date) -> list[Window]:
    """The windows of local date ``day``: none on a holiday; a temporary schedule covering it
    replaces its weekly windows (a temporary closed day: none); else the weekday's."""
    if day in schedule.holidays:
        return []
    covering = [t for t in schedule.temporary if t.first <= day <= t.last]
    if covering:
        return sorted({t.window for t in covering if t.window is not None}, key=_by_open)
    return sorted(set(schedule.weekly.get(day.weekday(), ())), key=_by_open)


def _by_open(window: Window) -> tuple[int, int]:
    return window.open_min, window.close_min


def day_windows(schedule: Schedule, day: date) -> list[DayWindow]:
    found = []
    for w in windows_of(schedule, day):
        close_day = day + timedelta(days=1) if w.across_midnight else day
        found.append(
            DayWindow(
                day,
                w,
                local_us(day, w.open_min, schedule.zone),
                local_us(close_day, w.close_min, schedule.zone),
            )
        )
    return found


def windows_between(schedule: Schedule, first: date, last: date) -> list[DayWindow]:
    """The windows of the local dates ``first``..``last``, in order."""
    found: list[DayWindow] = []
    day = first
    while day <= last:
        found.extend(day_windows(schedule, day))
        day += timedelta(days=1)
    return found


# due moments ---------------------------------------------------------------------------------


class Check(StrEnum):
    LATE_TO_OPEN = "LTO"
    LATE_TO_CLOSE = "LTC"


@dataclass(frozen=True, slots=True)
class Due:
    """A late check falling due at ``at_us`` for ``window``."""

    check: Check
    at_us: int
    window: DayWindow


def dues(schedule: Schedule, after_us: int, until_us: int) -> list[Due]:
    """The due moments in (``after_us``, ``until_us``], in order: late to open at open + grace,
    late to close at close + grace, for the checks that are on."""
    grace = units.minutes_us(schedule.grace_min)
    first = local_date(after_us, schedule.zone) - timedelta(days=2)  # a window across midnight
    last = local_date(until_us, schedule.zone)
    found = []
    for w in windows_between(schedule, first, last):
        if schedule.late_to_open:
            found.append(Due(Check.LATE_TO_OPEN, w.open_us + grace, w))
        if schedule.late_to_close:
            found.append(Due(Check.LATE_TO_CLOSE, w.close_us + grace, w))
    return sorted(
        (d for d in found if after_us < d.at_us <= until_us), key=lambda d: (d.at_us, d.check)
    )


def next_due(schedule: Schedule, after_us: int) -> int | None:
    """The first due moment after ``after_us`` within LOOK_AHEAD_DAYS days; None when none."""
    horizon = after_us + LOOK_AHEAD_DAYS * units.US_PER_DAY
    found = dues(schedule, after_us, horizon)
    return found[0].at_us if found else None


# judging -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OpenClose:
    """An opening or a closing: by a panel user or an operator."""

    at_us: int
    opening: bool
    user: str = ""
    opr: str | None = None

    @property
    def who(self) -> str:
        return f"BY OPERATOR {self.opr}" if self.opr else f"USER {self.user or '-'}"


def late(due: Due, events: Sequence[OpenClose]) -> bool:
    """Whether ``due`` is late, given every opening and closing up to it (in time order).

    Late to open: unless the last event at or before the due moment is an opening (none ever:
    late). Late to close: unless the last event within [window open, due moment] is a closing,
    whether or not an opening was seen that day."""
    if due.check is Check.LATE_TO_OPEN:
        before = [e for e in events if e.at_us <= due.at_us]
        return not before or not before[-1].opening
    within = [e for e in events if due.window.open_us <= e.at_us <= due.at_us]
    return not within or within[-1].opening


def unscheduled(schedule: Schedule, at_us: int) -> bool:
    """An opening at ``at_us`` lies in no window's [open - grace, close] (the windows of its
    local date and the day before, for windows across midnight)."""
    grace = units.minutes_us(schedule.grace_min)
    day = local_date(at_us, schedule.zone)
    return not any(
        w.open_us - grace <= at_us <= w.close_us
        for w in windows_between(schedule, day - timedelta(days=1), day)
    )


def early(schedule: Schedule, at_us: int) -> DayWindow | None:
    """The window a closing at ``at_us`` ends early (before close - early grace), if the early
    close check is on and there is one."""
    if not schedule.early_close:
        return None
    margin = units.minutes_us(schedule.early_grace_min)
    day = local_date(at_us, schedule.zone)
    for w in windows_between(schedule, day - timedelta(days=1), day):
        if w.open_us <= at_us < w.close_us - margin:
            return w
    return None


class Verb(StrEnum):
    RAISE = "raise"
    RESTORE = "restore"


@dataclass(frozen=True, slots=True)
class Verdict:
    """What to do: raise ``kind`` (due at ``at_us``: a late alarm's due moment, an event
    alarm's event time) with ``text``, or restore the open ``kind`` alarm at ``at_us``."""

    verb: Verb
    kind: SystemAlarm
    at_us: int
    text: str


def late_text(kind: SystemAlarm, window: DayWindow, area: str) -> str:
    """``LATE TO CLOSE 18:00``: the name and the window's local time it was due by."""
    minute = window.window.open_min if kind is LATE_TO_OPEN else window.window.close_min
    return f"{kind.name} {hhmm(minute)}{_area(area)}"


def event_text(kind: SystemAlarm, event: OpenClose, area: str) -> str:
    """``UNSCHEDULED OPEN USER 003``, ``EARLY CLOSE BY OPERATOR 001``."""
    return f"{kind.name} {event.who}{_area(area)}"


def restore_text(kind: SystemAlarm, area: str) -> str:
    """What a late alarm's restoral says before RESTORE: ``LATE TO CLOSE AREA 02``."""
    return f"{kind.name}{_area(area)}"


def _area(area: str) -> str:
    return f" AREA {area}" if area else ""


def judge(
    schedule: Schedule,
    area: str,
    after_us: int,
    now_us: int,
    events: Iterable[OpenClose],
    lto_open: bool,
    ltc_open: bool,
) -> list[Verdict]:
    """What the due moments and the events in (``after_us``, ``now_us``] raise and restore, in
    time order. ``events`` holds every opening and closing the judgement needs (those since
    the oldest window judged began, and the last one before), any order; ``lto_open`` and
    ``ltc_open``: the late alarms still open. An event at a due moment counts before it.

    Due moments older than LOOK_BACK_US before ``now_us`` are not judged (the caller logs it)."""
    ordered = sorted(events, key=lambda e: e.at_us)
    since = max(after_us, now_us - LOOK_BACK_US)
    steps: list[tuple[int, int, Due | OpenClose]] = [
        (d.at_us, 1, d) for d in dues(schedule, since, now_us)
    ]
    steps += [(e.at_us, 0, e) for e in ordered if after_us < e.at_us <= now_us]
    steps.sort(key=lambda s: (s[0], s[1]))
    verdicts: list[Verdict] = []
    for at_us, _, step in steps:
        if isinstance(step, Due):
            if not late(step, ordered):
                continue
            kind = LATE_TO_OPEN if step.check is Check.LATE_TO_OPEN else LATE_TO_CLOSE
            verdicts.append(Verdict(Verb.RAISE, kind, at_us, late_text(kind, step.window, area)))
            lto_open = lto_open or kind is LATE_TO_OPEN
            ltc_open = ltc_open or kind is LATE_TO_CLOSE
        elif step.opening:
            if lto_open:
                verdicts.append(Verdict(Verb.RESTORE, LATE_TO_OPEN, at_us, ""))
                lto_open = False
            if unscheduled(schedule, at_us):
                text = event_text(UNSCHEDULED_OPEN, step, area)
                verdicts.append(Verdict(Verb.RAISE, UNSCHEDULED_OPEN, at_us, text))
        else:
            if ltc_open:
                verdicts.append(Verdict(Verb.RESTORE, LATE_TO_CLOSE, at_us, ""))
                ltc_open = False
            if early(schedule, at_us) is not None:
                text = event_text(EARLY_CLOSE, step, area)
                verdicts.append(Verdict(Verb.RAISE, EARLY_CLOSE, at_us, text))
    return verdicts


def skipped_dues(schedule: Schedule, after_us: int, now_us: int) -> int:
    """How many due moments in (``after_us``, ``now_us``] are too old to judge."""
    cutoff = now_us - LOOK_BACK_US
    if after_us >= cutoff:
        return 0
    return len(dues(schedule, after_us, cutoff))


def earliest_needed(schedule: Schedule, after_us: int, now_us: int) -> int:
    """From when events are needed to judge (``after_us``, ``now_us``]: the earliest open of a
    window whose due moment falls in it, or ``after_us``."""
    since = max(after_us, now_us - LOOK_BACK_US)
    opens = [d.window.open_us for d in dues(schedule, since, now_us)]
    return min([after_us, *opens])
