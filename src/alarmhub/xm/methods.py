"""The three methods of the query interface: their form fields, rules and answers.

Each method reads a form (already authenticated) and answers a JSON object; bad fields raise
:class:`QueryRefused` with the body and HTTP status of decisions section 3.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo
from functools import partial
from typing import Any

from sqlalchemy import Connection

from alarmhub.core import response, units
from alarmhub.core.errors import QueryRefused
from alarmhub.core.line_mask import ACCOUNT_MAX
from alarmhub.core.operations import handling_times
from alarmhub.core.router import OPERATOR_RECORDS, RoutePath
from alarmhub.store import alarm_response, provisioning, queries
from alarmhub.store.alarm_response import RESPONSE
from alarmhub.xm import errors, fields

Form = Mapping[str, str]
YES_NO = ("Y", "N")
SOURCE_DATAENTRY = "DATAENTRY"
COUNT_DIGITS = 18  # a count of more digits is taken as COUNT_MAX
COUNT_MAX = 10**COUNT_DIGITS  # below 2**63: fits the database's integers
HOUR_US = 3_600_000_000
XMHIST_MAX_RECORDS = 10_000  # the default of the ``xmhist_max_records`` setting
UNRESOLVED_TYPES = frozenset({"MESSAG", "SYS"})


def _invalid(name: str) -> QueryRefused:
    return QueryRefused(errors.field_invalid(name))


def _yes_no(form: Form, name: str, default: str) -> bool:
    value = form.get(name, "") or default
    if value not in YES_NO:
        raise _invalid(name)
    return value == "Y"


def _digits(value: str) -> bool:
    """Whether ``value`` is ASCII digits only (``str.isdigit`` also takes superscript and
    full-width digits, which ``int`` refuses or ``strptime`` misreads)."""
    return value.isascii() and value.isdigit()


def _count(value: str) -> int | None:
    """A non-negative integer written in ASCII digits, capped at COUNT_MAX (no answer or window
    comes near it, and the database's integers are 64-bit); None when ``value`` is not one."""
    if not _digits(value):
        return None
    return COUNT_MAX if len(value) > COUNT_DIGITS else int(value)


def _date(value: str) -> datetime | None:
    if len(value) != 8 or not _digits(value):
        return None
    try:
        return datetime.strptime(value, "%Y%m%d")
    except ValueError:
        return None


def _time(form: Form, name: str) -> time | None:
    value = form.get(name, "")
    if not value:
        return None
    if len(value) != 4 or not _digits(value) or int(value[:2]) > 23 or int(value[2:]) > 59:
        raise _invalid(name)
    return time(int(value[:2]), int(value[2:]))


@dataclass(frozen=True, slots=True)
class HistoryQuery:
    account: str
    start_us: int
    stop_us: int
    limit: int | None
    operator_records: bool
    service_only: bool
    no_multiples: bool
    always_array: bool


def _us(moment: datetime, zone: tzinfo) -> int:
    return units.seconds_us(moment.replace(tzinfo=zone).timestamp())


def _end_of_day(day: datetime, zone: tzinfo) -> int:
    """The last microsecond of ``day`` in ``zone``: the next midnight less one (for 9999-12-31,
    which has no next day, its last second)."""
    if day.date() == date.max:
        return _us(datetime.combine(day, time(23, 59, 59)), zone)
    return _us(datetime.combine(day + timedelta(days=1), time(0, 0)), zone) - 1


def parse_history_query(form: Form, zone: tzinfo, now_us: int) -> HistoryQuery:
    """The XMHIST form as a query; the order of checks: ACCOUNT, the Y/N fields, LIMITHIST, the
    times, then the window (no usable window is the "malformed" error)."""
    account = form.get("ACCOUNT", "").strip()  # an ACCOUNT_NUMBER as answered, padded, matches
    if not account or len(account) > ACCOUNT_MAX:
        raise _invalid("ACCOUNT")
    service_only = _yes_no(form, "SERVICEONLY", "N")
    no_multiples = _yes_no(form, "NOMULTIPLES", "N")
    always_array = _yes_no(form, "ARRAY", "N")
    limit_text = form.get("LIMITHIST", "")
    limit = None
    if limit_text:
        limit = _count(limit_text)
        if limit is None or limit < 1:
            raise _invalid("LIMITHIST")
    start_time = _time(form, "STARTTIME") or time(0, 0)
    stop_time = _time(form, "STOPTIME")
    start_text, stop_text = form.get("STARTDATE", ""), form.get("STOPDATE", "")
    start_day, stop_day = _date(start_text), _date(stop_text)
    hours = _count(form.get("HOURS", ""))
    if start_day is not None and stop_day is not None:
        start_us = _us(datetime.combine(start_day, start_time), zone)
        if stop_time is None:
            stop_us = _end_of_day(stop_day, zone)
        else:
            stop_us = _us(datetime.combine(stop_day, stop_time), zone)
    elif not start_text and not stop_text and hours is not None and hours > 0:
        start_us, stop_us = max(0, now_us - hours * HOUR_US), now_us
    else:
        raise QueryRefused(dict(errors.MALFORMED))
    return HistoryQuery(
        account=account,
        start_us=start_us,
        stop_us=stop_us,
        limit=limit,
        operator_records=form.get("SEARCHTYPE", "") == "OPR",
        service_only=service_only,
        no_multiples=no_multiples,
        always_array=always_array,
    )


def history_event(row: Mapping[str, Any], zone: tzinfo) -> dict[str, str]:
    """One history event with the fields of spec 2.3, every value a string."""
    moment = fields.local(row["received_us"], zone)  # once: three fields are made of it
    ntd = fields.ntd_of(moment)
    return {
        "ACCOUNT_NUMBER": fields.account(row["account_number"]),
        "HISTORY_EVENT_NTD": ntd,
        "HISTORY_EVENT_DATE": fields.history_date(moment),
        "INCIDENT_NUMBER": str(row["incident_number"]),
        "SEIA_CODE": row["code"],
        "ZONE_CODE_1": row["event_code"],
        "ZONE_CODE_2": row["zone"],
        "TYPE": row["type"],
        "OPR": row["opr"] or "",
        "ALARM_CATEGORY": row["alarm_category"],
        "PRIORITY": row["priority"],
        "HIST_TEXT": row["hist_text"],
        "ZONE_1": row["area"],
        "ZONE_2": row["zone"],
        "AM_NOTIFY": row["am_notify"],
        "PENDING_TIME": ntd,
        "PR_CHECKSUM": row["pr_checksum"],
        "SECOND_ZONE_IS": row["second_zone_is"],
        "COLOR": row["color"],
        "VIDEO": row["video"],
    }


def history_paths(query: HistoryQuery) -> frozenset[str]:
    """The PR_CHECKSUM paths a query shows: the records of people's actions (an operator's, the
    integrator API's audit records: ``OPERATOR_RECORDS``) only with SEARCHTYPE=OPR, the service
    system's own events only with SERVICEONLY=Y, none of them with NOMULTIPLES=Y."""
    paths = frozenset(p.value for p in RoutePath)
    if not query.operator_records:
        paths -= OPERATOR_RECORDS
    if query.service_only:
        paths &= {RoutePath.SYSTEM.value}
    if query.no_multiples:
        paths -= {RoutePath.SYSTEM.value}
    return paths


def xmhist(
    conn: Connection,
    form: Form,
    zone: tzinfo,
    now_us: int,
    max_records: int = XMHIST_MAX_RECORDS,
) -> dict[str, Any]:
    """XMHIST; without LIMITHIST at most ``max_records`` events (the newest)."""
    query = parse_history_query(form, zone, now_us)
    rows = queries.account_history(
        conn,
        query.account,
        query.start_us,
        query.stop_us,
        limit=query.limit if query.limit is not None else max_records,
        paths=history_paths(query),
        exclude_types=UNRESOLVED_TYPES if query.no_multiples else frozenset(),
        settled_only=query.no_multiples,
    )
    events = [history_event(r, zone) for r in rows]
    event: Any = events[0] if len(events) == 1 and not query.always_array else events
    return {"EVENT": event, "TOTAL_RECORDS": str(len(events))}


def pending_alarm(
    row: Mapping[str, Any], zone: tzinfo, ntd_tag: str, contact_list: str | None = None
) -> dict[str, str]:
    """One pending alarm with the fields of spec 2.4; CONTACT_LIST only when the account has
    the call list of the alarm's type (decisions section 7)."""
    record = {
        "PRIORITY": row["priority"],
        "PASSCODE_VERIFIED": row["passcode_verified"],
        "PENDING_TIME": fields.ntd(row["pending_us"], zone),
        "PEND_TIME": fields.clock(row["received_us"], zone),
        "PEND_DATE": fields.pend_date(row["received_us"], zone),
        "HISTORY_TIME": fields.clock(row["received_us"], zone),
        "ACCOUNT_NUMBER": fields.account(row["account_number"]),
        "INCIDENT_NUMBER": str(row["alarm_id"]),
        "HIST_TEXT": row["hist_text"],
        "COMPANY_NAME": row["company_name"] or "",
        ntd_tag: fields.ntd(row["received_us"], zone),
        "TYPE": row["type"],
    }
    if contact_list is not None:
        record["CONTACT_LIST"] = contact_list
    return record


class _PendingAnswers:
    """XMAPEND answers, made once per state of the pending queue: every caller polling an
    unchanged queue gets the same answer without the queue being read and written again."""

    def __init__(self) -> None:
        self._answers: dict[tuple[str, int, int, int, str, str], dict[str, Any]] = {}

    def get(self, conn: Connection, zone: tzinfo, tag: str) -> dict[str, Any]:
        # the queue's state, the accounts' (COMPANY_NAME) and their call lists make the answer;
        # of one database (several nodes may share a process: the tests run them so)
        key = (
            str(conn.engine.url),
            queries.queue_revision(conn),
            provisioning.revision(conn),
            provisioning.revision(conn, RESPONSE),
            str(zone),
            tag,
        )
        answer = self._answers.get(key)
        if answer is None:
            rows = queries.pending_alarms(conn)
            type_lists = {
                code: alarm_type.contact_list
                for code, alarm_type in provisioning.alarm_type_overrides(conn).items()
                if alarm_type.contact_list
            }
            sizes = alarm_response.list_sizes(conn, {row["account_number"] for row in rows})
            records = [
                pending_alarm(
                    row,
                    zone,
                    tag,
                    response.contact_list(
                        type_lists.get(row["event_code"]), sizes.get(row["account_number"], {})
                    ),
                )
                for row in rows
            ]
            answer = {"XMAPEND": records, "TOTAL_RECORDS": str(len(records))}
            fresh = {k: v for k, v in self._answers.items() if k[:4] == key[:4]}
            self._answers = {**fresh, key: answer}  # only the newest state is kept
        return answer


_pending_answers = _PendingAnswers()


def xmapend(conn: Connection, form: Form, zone: tzinfo, now_us: int) -> dict[str, Any]:
    fixed = _yes_no(form, "FIXED_HISTORY_TAG", "Y")
    if form.get("SOURCE", "") != SOURCE_DATAENTRY:
        raise _invalid("SOURCE")
    tag = "HISTORY_EVENT_NTD" if fixed else "HISTORY-EVENT-NTD"
    return _pending_answers.get(conn, zone, tag)


def xmainpro(conn: Connection, form: Form, zone: tzinfo, now_us: int) -> dict[str, Any]:
    """In-process alarms (by PRIORITY then oldest) and one status record per signed-on operator;
    TOTAL_RECORDS counts the operator status records (decisions section 3)."""
    alarms = [in_process_alarm(row, now_us) for row in queries.in_process_alarms(conn)]
    operators = [operator_record(row) for row in queries.operator_statuses(conn)]
    return {"XMAINPRO": alarms + operators, "TOTAL_RECORDS": str(len(operators))}


def in_process_alarm(row: Mapping[str, Any], now_us: int) -> dict[str, str]:
    """One in-process alarm record of spec 2.5; timing fields that do not apply are omitted."""
    record = {
        "COLOR": row["color"],
        "ACCOUNT_NUMBER": fields.account(row["account_number"]),
        "COMPANY_NAME": row["company_name"] or "",
        "STREET_NAME2": row["street"] or "",
        "CITY": row["city"] or "",
        "STATE": row["account_state"] or "",
        "TYPE": row["type"],
        "OPR": row["opr"] or "",
    }
    times = handling_times(row["pending_us"], row["taken_us"], row["first_call_us"], now_us)
    record["PEND_TIME"] = times.pop("PEND_TIME")
    if row["been_on_hold"]:
        record["BEEN_ON_HOLD"] = "X"
    record.update(times)
    return record


def operator_record(row: Mapping[str, Any]) -> dict[str, str]:
    """An operator status record: COLOR, COMPANY_NAME (the receiving status) and OPR only."""
    return {"COLOR": row["color"], "COMPANY_NAME": row["status"], "OPR": row["code"]}


Method = Callable[[Connection, Form, tzinfo, int], dict[str, Any]]
METHODS: dict[str, Method] = {"XMHIST": xmhist, "XMAPEND": xmapend, "XMAINPRO": xmainpro}


def method_table(xmhist_max_records: int) -> dict[str, Method]:
    """The methods by name, XMHIST capped at ``xmhist_max_records`` events without LIMITHIST."""
    return {**METHODS, "XMHIST": partial(xmhist, max_records=xmhist_max_records)}
