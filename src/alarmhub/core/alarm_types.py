"""Alarm types: how each Contact ID event is handled, shown and prioritised at the station.

Defaults ship in ``alarm_types.tsv`` (one row per DC-05 event code); a station overrides any of
them (``alarmhub alarmtype set``). The system's own alarms (unknown account, runaway, source
failure, fail to test, communication failure, the schedule alarms, test end not restored, the
receiver links' alarms, the automation outputs' failure) are defined here, with the length an
alarm's text is cut to.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, fields, replace
from importlib import resources
from string import Formatter
from typing import Literal

from alarmhub.core.response import call_list_problem

Category = Literal["O", "S"]
OPERATOR_HANDLED: Category = "O"
SYSTEM_HANDLED: Category = "S"

TYPE_PATTERN = re.compile(r"[A-Z0-9]{1,5}")
COLOR_PATTERN = re.compile(r"[0-9A-F]{2}")
HIST_TEXT_MAX = 60  # a template's, before its fields are filled in
ALARM_TEXT_MAX = 80
"""An alarm's and a history event's text (HIST_TEXT) is cut to this many characters."""
PLACEHOLDERS = frozenset({"event", "zone", "area"})


@dataclass(frozen=True, slots=True)
class AlarmType:
    """How one event code is handled: TYPE, PRIORITY, COLOR, ALARM_CATEGORY, HIST_TEXT."""

    code: str
    type: str
    restore_type: str
    priority: str
    color: str
    category: Category
    restore_expected: bool
    hist_text: str
    contact_list: str = ""  # the call list its alarms use; empty: PRIMARY

    def text(self, event: str, zone: str, area: str) -> str:
        """The history text for one signal: the template filled in, upper case."""
        return self.hist_text.format(event=event, zone=zone, area=area).upper()


EDITABLE = tuple(f.name for f in fields(AlarmType) if f.name != "code")


def alarm_type_problem(alarm_type: AlarmType) -> str | None:
    """Why ``alarm_type`` cannot be used, or None when it can."""
    t = alarm_type
    if not TYPE_PATTERN.fullmatch(t.type) or not TYPE_PATTERN.fullmatch(t.restore_type):
        return "type must be 1-5 upper-case letters or digits"
    if len(t.priority) != 1 or not ("!" <= t.priority <= "~"):
        return "priority must be one printable ASCII character ('!' sorts first, then A-Z, a-z)"
    if not COLOR_PATTERN.fullmatch(t.color):
        return "color must be two hexadecimal digits, background then foreground (e.g. 4F)"
    if t.category not in (OPERATOR_HANDLED, SYSTEM_HANDLED):
        return "category must be O (operator-handled) or S (system-handled)"
    if not t.hist_text or len(t.hist_text) > HIST_TEXT_MAX:
        return f"hist_text must be 1-{HIST_TEXT_MAX} characters"
    try:
        names = {name for _, name, _, _ in Formatter().parse(t.hist_text) if name is not None}
    except ValueError as exc:
        return f"hist_text is not a valid template: {exc}"
    unknown = names - PLACEHOLDERS
    if unknown:
        return f"hist_text may use only {{event}}, {{zone}} and {{area}}, not {sorted(unknown)}"
    if t.contact_list:
        return call_list_problem(t.contact_list)
    return None


def load_defaults() -> dict[str, AlarmType]:
    """The shipped alarm types by event code."""
    text = resources.files("alarmhub.core").joinpath("alarm_types.tsv").read_text("utf-8")
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    table: dict[str, AlarmType] = {}
    for row in csv.DictReader(lines, delimiter="\t"):
        alarm_type = AlarmType(
            code=row["code"],
            type=row["type"],
            restore_type=row["restore_type"],
            priority=row["priority"],
            color=row["color"],
            category=row["category"],  # type: ignore[arg-type]
            restore_expected=row["restore_expected"] == "Y",
            hist_text=row["hist_text"],
        )
        problem = alarm_type_problem(alarm_type)
        if problem:
            raise ValueError(f"alarm_types.tsv, code {row['code']}: {problem}")
        table[alarm_type.code] = alarm_type
    return table


DEFAULTS: dict[str, AlarmType] = load_defaults()


def merged(overrides: dict[str, AlarmType]) -> dict[str, AlarmType]:
    """The defaults with a station's overrides on top."""
    return {**DEFAULTS, **overrides}


def with_changes(base: AlarmType, **changes: object) -> AlarmType:
    """``base`` with some fields changed (used by ``alarmtype set``)."""
    return replace(base, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class SystemAlarm:
    """An alarm the system raises itself; its full name goes to HIST_TEXT."""

    type: str
    name: str
    priority: str
    color: str


UNKNOWN_ACCOUNT = SystemAlarm("UNKN", "UNKNOWN ACCOUNT", "G", "DF")
RUNAWAY = SystemAlarm("RUNAW", "RUNAWAY", "G", "B0")
SOURCE_FAILURE = SystemAlarm("SRCFL", "SOURCE FAILURE", "G", "B0")
FAIL_TO_TEST = SystemAlarm("FTT", "FAIL TO TEST", "G", "B0")
COMMUNICATION_FAILURE = SystemAlarm("COMFL", "COMMUNICATION FAILURE", "G", "B0")
DURESS = SystemAlarm("DURES", "DURESS CODE GIVEN", "!", "5F")  # first in pending
# open/close supervision and on test (decisions §9)
LATE_TO_CLOSE = SystemAlarm("LTC", "LATE TO CLOSE", "G", "B0")
LATE_TO_OPEN = SystemAlarm("LTO", "LATE TO OPEN", "G", "B0")
UNSCHEDULED_OPEN = SystemAlarm("UNOPN", "UNSCHEDULED OPEN", "G", "B0")
EARLY_CLOSE = SystemAlarm("ECLOS", "EARLY CLOSE", "G", "B0")
TEST_END_NOT_RESTORED = SystemAlarm("TESTN", "TEST END NOT RESTORED", "G", "B0")
# links to hardware receivers (decisions §11)
RECEIVER_LINK_FAILURE = SystemAlarm("RXFL", "RECEIVER LINK FAILURE", "G", "B0")
RECEIVER_EVENT = SystemAlarm("RXEVT", "RECEIVER EVENT", "G", "B0")
RECEIVER_DATA = SystemAlarm("RXDAT", "RECEIVER DATA", "G", "DF")
# automation outputs (decisions §12)
AUTOMATION_OUTPUT_FAILURE = SystemAlarm("OUTFL", "AUTOMATION OUTPUT FAILURE", "G", "B0")
OUTPUT_CANNOT_SEND = SystemAlarm("OUTSK", "OUTPUT CANNOT SEND", "G", "B0")


def cut_text(text: str) -> str:
    """``text`` as an alarm or history event keeps it: its first ALARM_TEXT_MAX characters."""
    return text[:ALARM_TEXT_MAX]
