"""Automation outputs in the store (decisions section 12): the outputs (provisioned), the queue
of frames each has to send, written by the transactions that commit what the frames report
(routing's and supervision's, both after the incident counter's lock, so the frames' ids follow
commit order on both databases), the lane that lets one node at a time send an output, what
that node reports, AUTOMATION OUTPUT FAILURE, and OUTPUT CANNOT SEND for what an output's
protocol cannot carry.

Frames wait until the automation ACKs them, however long: those queued longer than
RETENTION_HOURS_DEFAULT are kept and counted as ``stale``, never deleted."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from sqlalchemy import Connection, case, delete, func, insert, select, update

from alarmhub.core import events, system_alarms, units
from alarmhub.core.alarm_types import (
    AUTOMATION_OUTPUT_FAILURE,
    OPERATOR_HANDLED,
    OUTPUT_CANNOT_SEND,
)
from alarmhub.core.errors import ProvisioningError
from alarmhub.core.line_mask import apply_mask
from alarmhub.core.operations import UNRESOLVED_STATES
from alarmhub.core.outputs import (
    CHANNEL,
    FAILURE_SECONDS,
    IDLE,
    LEASE_SECONDS,
    RETENTION_HOURS_DEFAULT,
    STATES,
    output_problem,
    signal_frame,
    wanted,
)
from alarmhub.core.outputs import OutputReport as OutputReport
from alarmhub.core.outputs import OutputSettings as OutputSettings
from alarmhub.core.outputs import QueuedFrame as QueuedFrame
from alarmhub.core.router import HistoryEvent, RoutePath, Router, StoredSignal
from alarmhub.store import lanes, schema
from alarmhub.store.provisioning import bump_revision

if TYPE_CHECKING:
    from alarmhub.store.provisioning_cache import ProvisioningCache
    from alarmhub.store.repository import SqlRepository

OUTPUT = schema.automation_output.c
FRAME = schema.output_frame.c
_HELD_BY_MAX = int(OUTPUT.held_by.type.length)  # type: ignore[attr-defined]
_ADDRESS_MAX = int(OUTPUT.address.type.length)  # type: ignore[attr-defined]
_MS_PER_SECOND = 1000
_SETTINGS = (
    OUTPUT.output_id, OUTPUT.name, OUTPUT.protocol, OUTPUT.transport, OUTPUT.addresses,
    OUTPUT.baud, OUTPUT.framing, OUTPUT.accounts, OUTPUT.receiver, OUTPUT.line,
    OUTPUT.line_digits, OUTPUT.ack_timeout_ms, OUTPUT.heartbeat_s,
)  # fmt: skip

log = logging.getLogger("alarmhub.outputs")


# outputs -------------------------------------------------------------------------------------


def add(conn: Connection, settings: OutputSettings, now_us: int) -> int:
    """Provision an output (``settings.output_id`` is not used; idle until a node reports it);
    its id. ProvisioningError if it is invalid or an output of that name exists."""
    problem = output_problem(settings)
    if problem:
        raise ProvisioningError(problem)
    if conn.execute(select(OUTPUT.output_id).where(OUTPUT.name == settings.name)).first():
        raise ProvisioningError(f"output {settings.name!r} exists")
    s = settings
    row = {
        "name": s.name, "protocol": s.protocol, "transport": s.transport,
        "addresses": " ".join(s.addresses), "baud": s.baud, "framing": s.framing,
        "accounts": " ".join(s.accounts), "receiver": s.receiver, "line": s.line,
        "line_digits": s.line_digits,
        "ack_timeout_ms": round(s.ack_timeout_seconds * _MS_PER_SECOND),
        "heartbeat_s": s.heartbeat_seconds, "created_us": now_us, "changed_us": now_us,
        "state": IDLE, "sent": 0, "resent": 0, "acks": 0, "naks": 0, "timeouts": 0,
    }  # fmt: skip
    output_id = conn.execute(
        insert(schema.automation_output).values(row).returning(OUTPUT.output_id)
    ).scalar_one()
    bump_revision(conn)  # routing's cached list of outputs
    return int(output_id)


def remove(conn: Connection, name: str) -> bool:
    """Remove the output ``name``, the frames it had still to send and its lane; whether it
    existed."""
    output_id = conn.execute(select(OUTPUT.output_id).where(OUTPUT.name == name)).scalar()
    if output_id is None:
        return False
    conn.execute(delete(schema.output_frame).where(FRAME.output_id == output_id))
    conn.execute(delete(schema.automation_output).where(OUTPUT.output_id == output_id))
    lanes.drop(conn, CHANNEL, output_id)
    bump_revision(conn)
    return True


def settings(conn: Connection) -> list[OutputSettings]:
    """Every output's settings, by name."""
    rows = conn.execute(select(*_SETTINGS).order_by(OUTPUT.name))
    return [_settings(row) for row in rows]


def _settings(row: Any) -> OutputSettings:
    (output_id, name, protocol, transport, addresses, baud, framing, accounts, receiver, line,
     line_digits, ack_timeout_ms, heartbeat_s) = row  # fmt: skip
    return OutputSettings(
        output_id=output_id, name=name, protocol=protocol, transport=transport,
        addresses=tuple(addresses.split()), baud=baud, framing=framing,
        accounts=tuple(accounts.split()), receiver=receiver, line=line,
        line_digits=line_digits, ack_timeout_seconds=ack_timeout_ms / _MS_PER_SECOND,
        heartbeat_seconds=heartbeat_s,
    )  # fmt: skip


def queued(conn: Connection, name: str) -> int | None:
    """How many frames the output ``name`` has still to send; None when there is none."""
    output_id = conn.execute(select(OUTPUT.output_id).where(OUTPUT.name == name)).scalar()
    if output_id is None:
        return None
    count = select(func.count()).select_from(schema.output_frame)
    return int(conn.execute(count.where(FRAME.output_id == output_id)).scalar_one())


# the queue -----------------------------------------------------------------------------------


def enqueue_signals(
    conn: Connection,
    signals: Sequence[StoredSignal],
    now_us: int,
    cache: ProvisioningCache | None = None,
    repo: SqlRepository | None = None,
) -> int:
    """Queue a frame for each of ``signals`` (routed in this transaction, in incident-number
    order) on each output that wants its account. ``cache``: routing's, which holds the outputs
    and the line masks as of its last refresh (read here when not given): nothing is read
    when there is no output. ``repo``: the transaction's, which raises OUTPUT CANNOT SEND for
    a signal an output cannot carry (without it, only logged). How many frames were queued."""
    outputs = cache.outputs if cache is not None else settings(conn)
    if not outputs:
        return 0
    masks = cache.masks if cache is not None else _masks(conn)
    rows: list[dict[str, Any]] = []
    unsendable: list[_Unsendable] = []
    for signal in signals:
        mask = masks.get(signal.dnis)
        account = (apply_mask(mask, signal.panel) if mask is not None else None) or ""
        rows += _frames(outputs, account, signal.panel, signal.code, signal.area, signal.zone,
                        now_us, signal, unsendable)  # fmt: skip
    if rows:
        conn.execute(insert(schema.output_frame), rows)
    if unsendable and repo is not None:
        _cannot_send(conn, repo, unsendable, now_us)
    return len(rows)


def enqueue_event(
    conn: Connection,
    account_number: str,
    panel: str,
    code: str,
    area: str,
    zone: str,
    now_us: int,
    outputs: Sequence[OutputSettings] | None = None,
    repo: SqlRepository | None = None,
) -> None:
    """Queue the Contact ID event alarmhub sends for what it knows itself of an account
    (core.outputs.OWN_EVENTS) on each output that wants the account; ``outputs`` as the
    caller's cache holds them (read here when not given); ``repo`` as for
    :func:`enqueue_signals`."""
    wanting = settings(conn) if outputs is None else outputs
    unsendable: list[_Unsendable] = []
    rows = _frames(wanting, account_number, panel, code, area, zone, now_us, None, unsendable)
    if rows:
        conn.execute(insert(schema.output_frame), rows)
    if unsendable and repo is not None:
        _cannot_send(conn, repo, unsendable, now_us)


class _Unsendable(NamedTuple):
    """An event an output's protocol cannot carry, and the signal it came from (None for
    alarmhub's own events)."""

    output: str
    panel: str
    code: str
    signal: StoredSignal | None


def _frames(
    outputs: Iterable[OutputSettings], account: str, panel: str, code: str, area: str,
    zone: str, now_us: int, signal: StoredSignal | None, unsendable: list[_Unsendable],
) -> list[dict[str, Any]]:  # fmt: skip
    """The frames of one event for the outputs that want ``account``; what an output cannot
    carry is logged and added to ``unsendable``, not queued (there is nothing to send)."""
    rows = []
    for output in outputs:
        if not wanted(output.accounts, account):
            continue
        try:
            frame = signal_frame(output, panel, code, area, zone)
        except ValueError as exc:  # a panel Sur-Gard cannot carry
            log.warning(
                "output cannot send the event",
                extra={"output": output.name, "panel": panel, "code": code,
                       "incident_number": signal.incident_number if signal else None,
                       "reason": str(exc)},
            )  # fmt: skip
            unsendable.append(_Unsendable(output.name, panel, code, signal))
            continue
        rows.append({"output_id": output.output_id, "frame": frame.decode("ascii"),
                     "account_number": account, "queued_us": now_us})  # fmt: skip
    return rows


def _cannot_send(
    conn: Connection, repo: SqlRepository, unsendable: Iterable[_Unsendable], now_us: int
) -> None:
    """OUTPUT CANNOT SEND (account "", the signal's origin) for what an output cannot carry:
    one alarm an output while it is unresolved; what else that output cannot carry meanwhile
    joins it (an event of its history, linked to it), so a panel that keeps sending does not
    fill the queue."""
    for event in unsendable:
        text = system_alarms.output_cannot_send(event.output, event.panel, event.code)
        open_id = _open_cannot_send(conn, repo, event.output)
        if open_id is None:
            raised = Router.raise_alarm(repo, OUTPUT_CANNOT_SEND, "", text, now_us, event.signal)
            repo.cannot_send_alarms[event.output] = raised
            continue
        origin = event.signal
        repo.add_history(
            HistoryEvent(
                account_number="",
                incident_number=repo.new_incident_number(),
                received_us=now_us,
                type=OUTPUT_CANNOT_SEND.type,
                alarm_category=OPERATOR_HANDLED,
                priority=OUTPUT_CANNOT_SEND.priority,
                color=OUTPUT_CANNOT_SEND.color,
                hist_text=text,
                path=RoutePath.SYSTEM,
                alarm_id=open_id,
                source=origin.source if origin else "",
                destination=origin.destination if origin else "",
                dnis=origin.dnis if origin else "",
                panel=origin.panel if origin else "",
            )
        )
        repo.join_alarm(open_id, OUTPUT_CANNOT_SEND.priority)


def _open_cannot_send(conn: Connection, repo: SqlRepository, output: str) -> int | None:
    """The output's unresolved OUTPUT CANNOT SEND alarm, the newest; None when there is none.
    The caller holds the incident counter's lock: no other node raises one meanwhile."""
    known = repo.cannot_send_alarms.get(output)
    if known is not None:
        return known
    alarm = schema.alarm.c
    prefix = system_alarms.output_cannot_send_of(output)
    found = conn.execute(
        select(alarm.alarm_id)
        .where(
            alarm.type == OUTPUT_CANNOT_SEND.type,
            alarm.state.in_(UNRESOLVED_STATES),
            alarm.hist_text.startswith(prefix, autoescape=True),
        )
        .order_by(alarm.alarm_id.desc())
        .limit(1)
    ).scalar()
    if found is None:
        return None
    repo.cannot_send_alarms[output] = int(found)
    return int(found)


def _masks(conn: Connection) -> dict[str, str]:
    return dict(conn.execute(select(schema.dnis.c.dnis, schema.dnis.c.line_mask)).tuples())


def last_panel(conn: Connection, account_number: str) -> str:
    """The panel the account's last signal came from (the account number when it has none)."""
    h = schema.history.c
    panel = conn.execute(
        select(h.panel)
        .where(h.account_number == account_number, h.panel != "")
        .order_by(h.received_us.desc())
        .limit(1)
    ).scalar()
    return str(panel) if panel else account_number


def head(conn: Connection, output_id: int, after_frame_id: int, limit: int) -> list[QueuedFrame]:
    """Up to ``limit`` of the output's frames after ``after_frame_id``, oldest first."""
    rows = conn.execute(
        select(FRAME.frame_id, FRAME.frame, FRAME.queued_us)
        .where(FRAME.output_id == output_id, FRAME.frame_id > after_frame_id)
        .order_by(FRAME.frame_id)
        .limit(limit)
    )
    return [QueuedFrame(frame_id, frame.encode("ascii"), at) for frame_id, frame, at in rows]


def delivered(conn: Connection, output_id: int, frame_id: int) -> None:
    """The automation ACKed the frame: it is deleted (the caller's transaction chooses not to
    wait for the disk, so at worst a power loss sends it again)."""
    conn.execute(
        delete(schema.output_frame).where(FRAME.output_id == output_id, FRAME.frame_id == frame_id)
    )


# the lane: one node sends an output at a time ------------------------------------------------


def hold(conn: Connection, output_id: int, node: str, now_us: int) -> bool:
    """Claim the output's lane for ``node`` for LEASE_SECONDS, or renew its claim; False when
    another node holds it (its lease not run out)."""
    until_us = now_us + units.seconds_us(LEASE_SECONDS)
    return lanes.hold(conn, CHANNEL, output_id, "", node, now_us, until_us)


def release(conn: Connection, node: str) -> None:
    """Free the outputs ``node`` holds (as it stops), for another node to take at once."""
    lanes.release(conn, node, CHANNEL)


# what the sending node reports ---------------------------------------------------------------


def report(conn: Connection, output_id: int, r: OutputReport, now_us: int | None = None) -> None:
    """Write what the node sending the output says of it (at ``now_us``, the clock's time when
    not given). Supervision raises and restores AUTOMATION OUTPUT FAILURE from
    ``failing_since_us`` (:func:`supervise`)."""
    if r.state not in STATES:
        raise ValueError(f"output state {r.state!r} is not one of {', '.join(STATES)}")
    if now_us is None:
        from alarmhub.clock import now_us as clock_us

        now_us = clock_us()
    conn.execute(
        update(schema.automation_output)
        .where(OUTPUT.output_id == output_id)
        .values(
            state=r.state, address=None if r.address is None else r.address[:_ADDRESS_MAX],
            held_by=r.node[:_HELD_BY_MAX], sent=r.sent, resent=r.resent, acks=r.acks,
            naks=r.naks, timeouts=r.timeouts, last_sent_us=r.last_sent_us,
            last_delivered_us=r.last_delivered_us, failing_since_us=r.failing_since_us,
            reported_us=now_us,
        )
    )  # fmt: skip


def list_outputs(conn: Connection, now_us: int) -> list[dict[str, Any]]:
    """Every output, by name, for ``output list``: its settings, what its node last reported,
    and its queue: ``queued`` frames not yet ACKed, the oldest one's age in seconds, and how
    many of them are ``stale`` (queued longer than RETENTION_HOURS_DEFAULT, kept)."""
    stale_before = now_us - units.hours_us(RETENTION_HOURS_DEFAULT)
    counts = (
        select(
            FRAME.output_id,
            func.count().label("queued"),
            func.min(FRAME.queued_us).label("oldest_us"),
            func.sum(case((FRAME.queued_us < stale_before, 1), else_=0)).label("stale"),
        )
        .group_by(FRAME.output_id)
        .subquery("counts")
    )
    query = (
        select(schema.automation_output, counts.c.queued, counts.c.oldest_us, counts.c.stale)
        .outerjoin(counts, counts.c.output_id == OUTPUT.output_id)
        .order_by(OUTPUT.name)
    )
    shown = []
    for row in conn.execute(query).mappings():
        oldest = row["oldest_us"]
        age = None if oldest is None else units.to_seconds(max(0, now_us - oldest))
        shown.append({
            "name": row["name"], "protocol": row["protocol"], "transport": row["transport"],
            "addresses": row["addresses"].split(), "baud": row["baud"],
            "framing": row["framing"], "accounts": row["accounts"].split(),
            "receiver": row["receiver"], "line": row["line"],
            "line_digits": row["line_digits"],
            "ack_timeout_seconds": row["ack_timeout_ms"] / _MS_PER_SECOND,
            "heartbeat_seconds": row["heartbeat_s"], "state": row["state"],
            "address": row["address"], "queued": int(row["queued"] or 0),
            "oldest_queued_s": age,
            "stale": int(row["stale"] or 0), "sent": row["sent"], "resent": row["resent"],
            "acks": row["acks"], "naks": row["naks"], "timeouts": row["timeouts"],
            "last_sent_us": row["last_sent_us"],
            "last_delivered_us": row["last_delivered_us"],
            "failing_since_us": row["failing_since_us"], "held_by": row["held_by"],
            "reported_us": row["reported_us"], "alarm_id": row["alarm_id"],
        })  # fmt: skip
    return shown


# supervision ---------------------------------------------------------------------------------


def supervise(conn: Connection, repo: SqlRepository, now_us: int) -> int:
    """AUTOMATION OUTPUT FAILURE for each output whose node has reported it failing to deliver
    for FAILURE_SECONDS, and its restoral (history, same text) once the node reports it
    delivering again; how many changed. Runs in supervision's transaction, after its lock."""
    failing_since = now_us - units.seconds_us(FAILURE_SECONDS)
    failed = conn.execute(
        select(OUTPUT.output_id, OUTPUT.name).where(
            OUTPUT.failing_since_us <= failing_since, OUTPUT.alarm_id.is_(None)
        )
    ).all()
    back = conn.execute(
        select(OUTPUT.output_id, OUTPUT.name, OUTPUT.alarm_id).where(
            OUTPUT.failing_since_us.is_(None), OUTPUT.alarm_id.is_not(None)
        )
    ).all()
    for output_id, name in failed:
        text = system_alarms.automation_output_failure(name)
        alarm_id = Router.raise_alarm(repo, AUTOMATION_OUTPUT_FAILURE, "", text, now_us)
        data = events.supervision_data(AUTOMATION_OUTPUT_FAILURE, "", alarm_id, output=name)
        repo.publish(events.SUPERVISION_FAILED, "", data, now_us)
        conn.execute(
            update(schema.automation_output)
            .where(OUTPUT.output_id == output_id)
            .values(alarm_id=alarm_id)
        )
        log.warning(
            "automation output failure", extra={"output": name, "incident_number": alarm_id}
        )
    for output_id, name, alarm_id in back:
        text = system_alarms.automation_output_failure(name)
        Router.restore_alarm(repo, AUTOMATION_OUTPUT_FAILURE, alarm_id, "", text, now_us)
        data = events.supervision_data(AUTOMATION_OUTPUT_FAILURE, "", alarm_id, output=name)
        repo.publish(events.SUPERVISION_RESTORED, "", data, now_us)
        conn.execute(
            update(schema.automation_output)
            .where(OUTPUT.output_id == output_id)
            .values(alarm_id=None)
        )
        log.info("automation output restored", extra={"output": name, "incident_number": alarm_id})
    return len(failed) + len(back)
