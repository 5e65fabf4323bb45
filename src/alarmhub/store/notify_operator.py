"""The operators' side of notifications (decisions sections 8 and 13), in the store: the plan
step ``notify`` done from the alarm screen by messaging contacts of the alarm's account (whom the
operator may pick, and whom by default), queued in the transaction that records the step (the
same table, lanes and rendering as :mod:`alarmhub.store.notifications`: unrendered, rendered
when sent); an alarm's messages; the failed messages a resend may queue again
(:mod:`alarmhub.store.notification_sending`).

By default the step messages the contacts subscribed to the alarm's kind, each by the channels
it chose; when nobody is, the contacts of the alarm's call list that have an e-mail address or a
mobile phone, by every channel they can be reached by.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, tzinfo
from typing import Any

from sqlalchemy import Connection, and_, func, insert, select

from alarmhub.core import events
from alarmhub.core import notifications as rules
from alarmhub.core import operations as ops
from alarmhub.core.errors import ActionRefused
from alarmhub.core.operations import Action
from alarmhub.core.plans import StepKind
from alarmhub.store import (
    alarm_response,
    handling,
    operator_audit,
    plans,
    provisioning,
    queries,
    schema,
)
from alarmhub.store import notification_rendering as rendering
from alarmhub.store import notifications as store
from alarmhub.store.alarm_response import PHONE_COLUMNS

NOTE = schema.notification.c
CONTACT = schema.contact.c
RECIPIENTS_MAX = 50
FAILED_LIMIT = 200
MESSAGE_FIELDS = ("id", "contact_id", "name", "kind", "channel", "to", "state", "attempts",
                  "last_error", "queued_us", "sent_us", "account", "subject")  # fmt: skip
"""The fields of one message as the console shows it."""


def alarm_kind(row: dict[str, Any]) -> str:
    """The notification kind of an alarm (``alarm``, ``trouble`` or ``schedule``)."""
    data = {"type": row["type"]}
    return rules.event_kind(events.ALARM_RAISED, row["account_number"], data) or rules.ALARM


def _reachable(contact: Any) -> list[tuple[str, str]]:
    """Each channel a contact can be reached by, with where it goes."""
    found = []
    if contact["email"]:
        found.append((rules.EMAIL, str(contact["email"])))
    phone = store.mobile(contact)
    if phone:
        found.append((rules.SMS, phone))
    return found


def choices(conn: Connection, row: dict[str, Any]) -> dict[str, Any]:
    """Whom the alarm ``row``'s notify step may message: every contact of its account with an
    e-mail address or a mobile phone, whether it subscribes to the alarm's kind and is on its
    call list, and those chosen by default with their channels."""
    kind = alarm_kind(row)
    account = row["account_number"]
    on_list = {
        c["id"]
        for c in alarm_response.call_list(
            conn, account, alarm_response.type_call_list(conn, row["event_code"])
        )
    }
    phones = [c for number, phone_kind in PHONE_COLUMNS for c in (CONTACT[number],
                                                                 CONTACT[phone_kind])]  # fmt: skip
    contacts: list[dict[str, Any]] = []
    for found in conn.execute(
        select(CONTACT.contact_id, CONTACT.name, CONTACT.email, CONTACT.notify, CONTACT.notify_by,
               *phones)
        .where(CONTACT.account_number == account)
        .order_by(CONTACT.contact_id)
    ).mappings():  # fmt: skip
        reachable = dict(_reachable(found))
        if not reachable:
            continue
        subscribed = kind in found["notify"].split()
        by = found["notify_by"].split() if subscribed else []
        chosen_by = [ch for ch in by if ch in reachable]
        contact_id = int(found["contact_id"])
        contacts.append({
            "id": contact_id, "name": found["name"], "email": reachable.get(rules.EMAIL, ""),
            "mobile": reachable.get(rules.SMS, ""), "subscribed": subscribed,
            "on_call_list": contact_id in on_list, "channels": chosen_by,
        })  # fmt: skip
    if not any(c["channels"] for c in contacts):  # nobody subscribes: the call list
        for c in contacts:
            if c["on_call_list"]:
                c["channels"] = [ch for ch in rules.CHANNELS if c[_WHERE[ch]]]
    for c in contacts:
        c["chosen"] = bool(c["channels"])
    return {"kind": kind, "contacts": contacts, "channels": list(rules.CHANNELS)}


_WHERE = {rules.EMAIL: "email", rules.SMS: "mobile"}


def _step_position(conn: Connection, row: dict[str, Any], position: int) -> None:
    """Check that ``position`` is a notify step of the alarm's plan not yet done."""
    plan, states, _ = plans.alarm_plan(conn, row)
    if not 1 <= position <= len(plan.steps):
        raise ActionRefused("OPS-STEP", f"the plan has no step {position}", 422)
    state = states[position - 1]
    if state.step.kind is not StepKind.NOTIFY:
        raise ActionRefused(
            "OPS-STEP", f"step {position} ({state.step.title()}) is not a notify step", 409
        )
    if state.done:
        raise ActionRefused("OPS-STEP", f"step {position} is already done", 409)


def notify(
    conn: Connection,
    code: str,
    alarm_id: int,
    position: int,
    recipients: Sequence[tuple[int, Sequence[str]]],
    now_us: int,
) -> str:
    """Do the notify step ``position`` of the alarm operator ``code`` holds: message each of
    ``recipients`` (contact id, channels) about the alarm, and record the step done with whom
    and by what channel (its note, and the operator record in history). The note."""
    if not recipients:
        raise ActionRefused("OPS-NOTIFY", "choose at least one contact to message", 422)
    if len(recipients) > RECIPIENTS_MAX:
        raise ActionRefused("OPS-NOTIFY", f"at most {RECIPIENTS_MAX} contacts at once", 422)
    _, row = handling.holding_alarm(conn, code, alarm_id)
    _step_position(conn, row, position)
    kind = alarm_kind(row)
    account = row["account_number"]
    chosen: list[store.Recipient] = []
    said: list[str] = []
    merged: dict[int, list[str]] = {}  # a contact named twice: each channel once
    for contact_id, channels in recipients:
        if not channels or any(ch not in rules.CHANNELS for ch in channels):
            raise ActionRefused("OPS-NOTIFY", f"channels are {', '.join(rules.CHANNELS)}", 422)
        merged.setdefault(contact_id, []).extend(channels)
    for contact_id, channels in merged.items():
        contact = _contact(conn, account, contact_id)
        reachable = dict(_reachable(contact))
        missing = [ch for ch in channels if ch not in reachable]
        if missing:
            what = "e-mail address" if missing[0] == rules.EMAIL else "mobile phone"
            raise ActionRefused("OPS-NOTIFY", f"{contact['name']} has no {what}", 422)
        ordered = [ch for ch in rules.CHANNELS if ch in channels]  # each once
        chosen.append((contact_id, frozenset({kind}), [(ch, reachable[ch]) for ch in ordered]))
        said.append(f"{rules.text_safe(contact['name'])} BY {' '.join(ordered).upper()}")
    told = store.Told(kind, account, row["hist_text"], int(row["received_us"]), row["zone"],
                      row["area"], incident_number=alarm_id)  # fmt: skip
    store.send(conn, [told], {account: chosen}, now_us)
    note = ("MESSAGED " + "; ".join(said))[: ops.NOTE_MAX]
    conn.execute(
        insert(schema.step_done).values(
            alarm_id=alarm_id, position=position, opr=code, at_us=now_us, note=note
        )
    )
    detail = f"{position} NOTIFY: {note}"
    operator_audit.record(conn, code, Action.STEP, now_us, row, detail, note=note)
    provisioning.bump_revision(conn, queries.QUEUE)
    return note


def _contact(conn: Connection, account: str, contact_id: int) -> Any:
    found = conn.execute(
        select(schema.contact).where(
            and_(CONTACT.contact_id == contact_id, CONTACT.account_number == account)
        )
    ).mappings().first()  # fmt: skip
    if found is None:
        raise ActionRefused("OPS-CONTACT", f"contact {contact_id} is not one of {account}'s", 422)
    return found


def _shown(query: Any) -> Any:
    return (
        select(NOTE.notification_id, NOTE.contact_id, CONTACT.name, NOTE.kind, NOTE.channel,
               NOTE.recipient, NOTE.state, NOTE.attempts, NOTE.last_error, NOTE.queued_us,
               NOTE.sent_us, NOTE.account_number, NOTE.subject,
               NOTE.body, NOTE.hist_text, NOTE.zone, NOTE.area, NOTE.at_us)
        .select_from(schema.notification.outerjoin(
            schema.contact, CONTACT.contact_id == NOTE.contact_id))
        .where(query)
        .order_by(NOTE.notification_id.desc())
    )  # fmt: skip


def _rows(conn: Connection, query: Any, station: tzinfo) -> list[dict[str, Any]]:
    """The messages as shown: a queued one's subject as it would be sent now."""
    rows = conn.execute(query).all()
    subjects = rendering.subjects(conn, rows, station)
    return [
        dict(zip(MESSAGE_FIELDS, r[: len(MESSAGE_FIELDS)], strict=True))
        | {"name": r.name or "", "subject": subjects.get(r.notification_id, r.subject)}
        for r in rows
    ]


def for_alarm(
    conn: Connection, account: str, alarm_id: int, station: tzinfo = UTC
) -> list[dict[str, Any]]:
    """The messages about an alarm (those its event queued, those its operator sent), newest
    first, each to whom, by which channel, its state and attempts (times in the account's zone,
    else in ``station``'s)."""
    query = and_(NOTE.account_number == account, NOTE.incident_number == alarm_id)
    return _rows(conn, _shown(query), station)


def failed(
    conn: Connection, limit: int = FAILED_LIMIT, station: tzinfo = UTC
) -> tuple[list[dict[str, Any]], int]:
    """The failed messages, newest first (at most ``limit``), and how many there are."""
    rows = _rows(conn, _shown(NOTE.state == rules.FAILED).limit(limit), station)
    return rows, failed_count(conn)


def failed_count(conn: Connection) -> int:
    return int(
        conn.execute(
            select(func.count()).select_from(schema.notification).where(NOTE.state == rules.FAILED)
        ).scalar_one()
    )
