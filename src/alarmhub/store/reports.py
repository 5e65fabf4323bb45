"""The handling report (``alarmhub report handling``, ``GET /console/api/reports/handling``):
over the alarms resolved in a window, per alarm TYPE and per operator, how many were handled and
how long they took to be taken (pending to taken) and to be resolved (pending to resolved), with
their median and 90th percentile (``core.reports``); the dispatches of the window by agency and
AVS-01 level; and the false-alarm resolutions (``FALSE_ALARM_CODES``) by account, the accounts
with the most first.

One pass over the resolved alarms of the window reads seven columns of each, streamed; the
durations are kept in compact arrays until their percentiles are taken. Dispatches are counted
by the database over the index on their time.
"""

from __future__ import annotations

from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, func, select

from alarmhub.core import reports
from alarmhub.core.operations import FALSE_ALARM_CODES, AlarmState
from alarmhub.store import schema

ALARM = schema.alarm.c
DISPATCH = schema.dispatch.c
OPERATOR = schema.operator.c
ACCOUNT = schema.account.c
TOP_ACCOUNTS = 20
"""The false-alarm table lists at most this many accounts."""
STREAM_ROWS = 5000


@dataclass
class _Times:
    """The handling times of one group of alarms, in microseconds."""

    handled: int = 0
    take: array[int] = field(default_factory=lambda: array("q"))
    resolve: array[int] = field(default_factory=lambda: array("q"))

    def add(self, pending_us: int, taken_us: int | None, resolved_us: int) -> None:
        self.handled += 1
        if taken_us is not None:
            self.take.append(max(0, taken_us - pending_us))
        self.resolve.append(max(0, resolved_us - pending_us))

    def summary(self) -> dict[str, Any]:
        return {
            "handled": self.handled,
            "take": reports.spread(self.take).as_dict(),
            "resolve": reports.spread(self.resolve).as_dict(),
        }


def handling(
    conn: Connection, start_us: int, stop_us: int, top: int = TOP_ACCOUNTS
) -> dict[str, Any]:
    """The handling report of the alarms resolved and the dispatches made in
    ``[start_us, stop_us)``."""
    overall = _Times()
    by_type: defaultdict[str, _Times] = defaultdict(_Times)
    by_operator: defaultdict[str, _Times] = defaultdict(_Times)
    false_alarms: defaultdict[str, Counter[str]] = defaultdict(Counter)
    rows = conn.execute(
        select(
            ALARM.type,
            ALARM.opr,
            ALARM.account_number,
            ALARM.resolution,
            ALARM.pending_us,
            ALARM.taken_us,
            ALARM.resolved_us,
        )
        .where(
            ALARM.state == AlarmState.RESOLVED,
            ALARM.resolved_us >= start_us,
            ALARM.resolved_us < stop_us,
            ALARM.pending_us < stop_us,
        )
        .execution_options(yield_per=STREAM_ROWS)
    )
    for alarm_type, opr, account, resolution, pending_us, taken_us, resolved_us in rows:
        overall.add(pending_us, taken_us, resolved_us)
        by_type[alarm_type].add(pending_us, taken_us, resolved_us)
        by_operator[opr or ""].add(pending_us, taken_us, resolved_us)
        if resolution in FALSE_ALARM_CODES:
            false_alarms[account][resolution] += 1
    names = _operator_names(conn, by_operator)
    return {
        "start_us": start_us,
        "stop_us": stop_us,
        **overall.summary(),
        "by_type": [{"type": t, **by_type[t].summary()} for t in sorted(by_type)],
        "by_operator": [
            {"opr": code, "name": names.get(code, ""), **by_operator[code].summary()}
            for code in sorted(by_operator)
        ],
        "dispatches": dispatches(conn, start_us, stop_us),
        "false_alarms": _false_alarms(conn, false_alarms, top),
        "false_alarms_total": sum(sum(c.values()) for c in false_alarms.values()),
    }


def dispatches(conn: Connection, start_us: int, stop_us: int) -> list[dict[str, Any]]:
    """The dispatches made in ``[start_us, stop_us)``, counted by agency and AVS-01 level."""
    rows = conn.execute(
        select(DISPATCH.agency, DISPATCH.avs, func.count())
        .where(DISPATCH.at_us >= start_us, DISPATCH.at_us < stop_us)
        .group_by(DISPATCH.agency, DISPATCH.avs)
        .order_by(DISPATCH.agency, DISPATCH.avs)
    )
    return [{"agency": agency, "avs": int(avs), "count": int(n)} for agency, avs, n in rows]


def _operator_names(conn: Connection, codes: Iterable[str]) -> dict[str, str]:
    wanted = [c for c in codes if c]
    if not wanted:
        return {}
    rows = conn.execute(select(OPERATOR.code, OPERATOR.name).where(OPERATOR.code.in_(wanted)))
    return {code: name for code, name in rows}


def _false_alarms(
    conn: Connection, counted: dict[str, Counter[str]], top: int
) -> list[dict[str, Any]]:
    """The ``top`` accounts with the most false alarms (then by number), with their names."""
    ranked = sorted(counted.items(), key=lambda item: (-sum(item[1].values()), item[0]))[:top]
    numbers = [number for number, _ in ranked if number]
    names: dict[str, str] = {}
    if numbers:
        rows = conn.execute(
            select(ACCOUNT.account_number, ACCOUNT.company_name).where(
                ACCOUNT.account_number.in_(numbers)
            )
        )
        names = {number: name for number, name in rows}
    return [
        {
            "account_number": number,
            "company_name": names.get(number, ""),
            "count": sum(codes.values()),
            "by_code": {code: codes.get(code, 0) for code in FALSE_ALARM_CODES},
        }
        for number, codes in ranked
    ]
