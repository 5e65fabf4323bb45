"""Links to hardware receivers in the store: the links and the receiver lines each maps to a
dnis (provisioned), what the node holding a link reports of it, the receiver events and
unreadable frames kept as received and raised to pending, and RECEIVER LINK FAILURE."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

from sqlalchemy import Connection, delete, func, insert, select, update
from sqlalchemy.engine import Engine

from alarmhub.core import events, system_alarms
from alarmhub.core.alarm_types import (
    RECEIVER_DATA,
    RECEIVER_EVENT,
    RECEIVER_LINK_FAILURE,
    SystemAlarm,
)
from alarmhub.core.dc09 import line_name
from alarmhub.core.errors import ProvisioningError
from alarmhub.core.receiver_links import (
    FAILED,
    IDLE,
    STATES,
    line_number,
    link_problem,
    name_problem,
)
from alarmhub.core.receiver_links import PROTOCOLS as PROTOCOLS
from alarmhub.core.receiver_links import TRANSPORTS as TRANSPORTS
from alarmhub.core.receiver_links import LinkSettings as LinkSettings
from alarmhub.core.router import Router, StoredSignal
from alarmhub.core.signal import valid_dnis
from alarmhub.store import handling, schema
from alarmhub.store.commit import lock_incidents
from alarmhub.store.provisioning import bump_revision
from alarmhub.store.provisioning_cache import ProvisioningCache
from alarmhub.store.repository import Inserts, SqlRepository

LINK = schema.receiver_link.c
LINE = schema.receiver_line.c
FRAME = schema.receiver_frame.c
KINDS: dict[str, tuple[SystemAlarm, Callable[[str, str], str]]] = {
    RECEIVER_EVENT.type: (RECEIVER_EVENT, system_alarms.receiver_event),
    RECEIVER_DATA.type: (RECEIVER_DATA, system_alarms.receiver_data),
}
"""The frames kept (``receiver_frame.kind``): the alarm each raises and its text."""
SETTINGS = tuple(f.name for f in fields(LinkSettings))
"""The columns of a link's settings (those of :class:`LinkSettings`)."""
_FRAME_MAX = int(FRAME.frame.type.length)  # type: ignore[attr-defined]
_LAST_FRAME_MAX = int(LINK.last_frame.type.length)  # type: ignore[attr-defined]
_HELD_BY_MAX = int(LINK.held_by.type.length)  # type: ignore[attr-defined]
_NUMBER = re.compile(r"[0-9]{1,9}")
_WHERE_MAX = int(schema.alarm.c.destination.type.length)  # type: ignore[attr-defined]

log = logging.getLogger("alarmhub.receivers")


@dataclass(frozen=True, slots=True)
class LinkReport:
    """What the node holding a link says of it: ``state`` idle (no frame yet), up or failed;
    its last frame's time and text; its frames, answers and unreadable frames counted since
    the link started, and its frames in the last minute."""

    name: str
    state: str
    held_by: str
    last_seen_us: int | None
    last_frame: str | None
    frames: int
    acks: int
    naks: int
    unreadable: int
    per_minute: int


# links ---------------------------------------------------------------------------------------


def add_link(conn: Connection, link: LinkSettings, now_us: int) -> None:
    """Provision ``link`` (idle until a node reports it); ProvisioningError if it is invalid or
    a link of that name exists."""
    problem = link_problem(link)
    if problem:
        raise ProvisioningError(problem)
    if conn.execute(select(LINK.name).where(LINK.name == link.name)).first():
        raise ProvisioningError(f"receiver link {link.name!r} exists")
    row = {name: getattr(link, name) for name in SETTINGS} | {
        "changed_us": now_us, "created_us": now_us, "state": IDLE,
        "frames": 0, "acks": 0, "naks": 0, "unreadable": 0, "per_minute": 0,
    }  # fmt: skip
    conn.execute(insert(schema.receiver_link).values(row))
    bump_revision(conn)


def remove_link(conn: Connection, name: str) -> bool:
    """Remove the link ``name`` and its lines; whether it existed."""
    removed = conn.execute(delete(schema.receiver_link).where(LINK.name == name)).rowcount
    conn.execute(delete(schema.receiver_line).where(LINE.link == name))
    if removed:
        bump_revision(conn)
    return bool(removed)


def links(conn: Connection) -> list[LinkSettings]:
    """Every link's settings, by name."""
    columns = [LINK[name] for name in SETTINGS]
    rows = conn.execute(select(*columns).order_by(LINK.name))
    return [LinkSettings(*row) for row in rows]


def link_states(conn: Connection) -> list[dict[str, Any]]:
    """Every link, by name: its settings, what its node last reported (state, held_by,
    last_seen_us, last_frame, frames, acks, naks, unreadable, per_minute, reported_us),
    failed_us and its RECEIVER LINK FAILURE alarm, ``failed`` (failed_us set) and how many
    ``lines`` it maps."""
    counts = select(LINE.link, func.count().label("lines")).group_by(LINE.link).subquery("counts")
    query = (
        select(schema.receiver_link, func.coalesce(counts.c.lines, 0).label("lines"))
        .outerjoin(counts, counts.c.link == LINK.name)
        .order_by(LINK.name)
    )
    return [
        {**row, "failed": row["failed_us"] is not None} for row in conn.execute(query).mappings()
    ]


def _link_exists(conn: Connection, name: str) -> None:
    problem = name_problem(name)
    if problem:
        raise ProvisioningError(problem)
    if not conn.execute(select(LINK.name).where(LINK.name == name)).first():
        raise ProvisioningError(f"no receiver link {name!r}")


# lines ---------------------------------------------------------------------------------------


def _numbers(receiver: int | str, line: int | str) -> tuple[int, int]:
    try:
        return line_number(receiver, "receiver"), line_number(line, "line")
    except ValueError as exc:
        raise ProvisioningError(str(exc)) from None


def add_line(conn: Connection, link: str, receiver: int, line: int, dnis: str, now_us: int) -> None:
    """Map the link's receiver and line numbers to ``dnis``; ProvisioningError if the link is
    missing, a number or the dnis is invalid, or the line is mapped already."""
    receiver, line = _numbers(receiver, line)
    if not valid_dnis(dnis):
        raise ProvisioningError(
            f"invalid dnis {dnis!r}: must be 1-5 letters or digits, not all zeros"
        )
    _link_exists(conn, link)
    where = (LINE.link == link) & (LINE.receiver == receiver) & (LINE.line == line)
    if conn.execute(select(LINE.dnis).where(where)).first():
        raise ProvisioningError(f"{link} receiver {receiver} line {line} is already mapped")
    conn.execute(
        insert(schema.receiver_line).values(
            link=link, receiver=receiver, line=line, dnis=dnis, created_us=now_us
        )
    )
    bump_revision(conn)


def remove_line(conn: Connection, link: str, receiver: int, line: int) -> bool:
    """Remove a line's mapping; whether it was mapped."""
    receiver, line = _numbers(receiver, line)
    where = (LINE.link == link) & (LINE.receiver == receiver) & (LINE.line == line)
    removed = conn.execute(delete(schema.receiver_line).where(where)).rowcount
    if removed:
        bump_revision(conn)
    return bool(removed)


def lines(conn: Connection, link: str | None = None) -> list[tuple[str, int, int, str]]:
    """The mapped lines (of ``link``, or of every link): (link, receiver, line, dnis), in
    that order."""
    query = select(LINE.link, LINE.receiver, LINE.line, LINE.dnis)
    if link is not None:
        query = query.where(LINE.link == link)
    rows = conn.execute(query.order_by(LINE.link, LINE.receiver, LINE.line))
    return [(name, receiver, line, dnis) for name, receiver, line, dnis in rows]


def line_map(conn: Connection) -> dict[tuple[str, int, int], str]:
    """Every mapped line's dnis, by (link, receiver, line)."""
    return {(name, receiver, line): dnis for name, receiver, line, dnis in lines(conn)}


# what the holding node reports ---------------------------------------------------------------


def report(conn: Connection, reports: Sequence[LinkReport], now_us: int) -> None:
    """Write what the holding node says of its links. A link reported failed gets failed_us
    (kept from its first failed report on); any other state clears it. Supervision raises and
    restores RECEIVER LINK FAILURE from failed_us (:func:`supervise`)."""
    for r in reports:
        if r.state not in STATES:
            raise ValueError(f"link state {r.state!r} is not one of {', '.join(STATES)}")
        failed = func.coalesce(LINK.failed_us, now_us) if r.state == FAILED else None
        conn.execute(
            update(schema.receiver_link)
            .where(LINK.name == r.name)
            .values(
                state=r.state, held_by=r.held_by[:_HELD_BY_MAX], last_seen_us=r.last_seen_us,
                last_frame=None if r.last_frame is None else r.last_frame[:_LAST_FRAME_MAX],
                frames=r.frames, acks=r.acks, naks=r.naks, unreadable=r.unreadable,
                per_minute=r.per_minute, reported_us=now_us, failed_us=failed,
            )
        )  # fmt: skip


# receiver events and unreadable frames -------------------------------------------------------


def kept_text(text: str) -> str:
    """``text`` as ``receiver_frame`` keeps it: whole when it fits, else as much as fits and
    how many characters were cut (the splitters bound a frame, so only a frame made mostly of
    escaped control bytes can be that long)."""
    if len(text) <= _FRAME_MAX:
        return text
    mark = f"[{len(text)} CHARACTERS, CUT]"
    return text[: _FRAME_MAX - len(mark)] + mark


class FrameKeeper:
    """Keeps a receiver's own events (RXEVT) and the frames that could not be read (RXDAT) as
    received, each raised to pending as RECEIVER EVENT or RECEIVER DATA; one per node."""

    def __init__(self, engine: Engine) -> None:
        self.cache = ProvisioningCache()  # the TYPEs in storm mode, the webhooks
        self._inserts = Inserts(engine)

    def keep(
        self,
        conn: Connection,
        link: str,
        kind: str,
        text: str,
        received_us: int,
        receiver: str = "",
        line: str = "",
    ) -> int:
        """Store the frame (``kind`` RXEVT or RXDAT, ``text`` with its control bytes escaped)
        and raise its alarm to pending (account "") in ``conn``'s transaction; the alarm id.
        The receiver and line numbers, when the frame gave them, say where it came from."""
        if kind not in KINDS:
            raise ValueError(f"frame kind {kind!r} is not one of {', '.join(KINDS)}")
        alarm_kind, alarm_text = KINDS[kind]
        lock_incidents(conn)
        self.cache.refresh(conn)
        repo = SqlRepository(conn, self.cache, self._inserts)
        origin = StoredSignal(0, link, _where(receiver, line), "", "", "", "", "", received_us)
        alarm_id = Router.raise_alarm(
            repo, alarm_kind, "", alarm_text(link, text), received_us, origin
        )
        conn.execute(
            insert(schema.receiver_frame).values(
                link=link, received_us=received_us, kind=kind, frame=kept_text(text),
                alarm_id=alarm_id,
            )
        )  # fmt: skip
        raised = repo.flush()
        handling.hand_out(conn, received_us, arriving=raised)
        return alarm_id


def _where(receiver: str, line: str) -> str:
    """The receiver line a frame came from as operators read it (``R1L2``: numbers without
    their leading zeros), "" when its header gave none."""
    if not receiver and not line:
        return ""
    numbers = [str(int(n)) if _NUMBER.fullmatch(n) else n for n in (receiver, line)]
    return line_name(*numbers)[:_WHERE_MAX]


# supervision ---------------------------------------------------------------------------------


def supervise(conn: Connection, repo: SqlRepository, now_us: int) -> int:
    """RECEIVER LINK FAILURE for each link its node marked failed, and its restoral (history,
    same text) when the node marked it seen again, as COMMUNICATION FAILURE for DC-09 accounts;
    how many changed. Runs in supervision's transaction, after its lock."""
    failed = (
        conn.execute(select(LINK.name).where(LINK.failed_us.is_not(None), LINK.alarm_id.is_(None)))
        .scalars()
        .all()
    )
    back = conn.execute(
        select(LINK.name, LINK.alarm_id).where(LINK.failed_us.is_(None), LINK.alarm_id.is_not(None))
    ).all()
    for name in failed:
        text = system_alarms.receiver_link_failure(name)
        alarm_id = Router.raise_alarm(repo, RECEIVER_LINK_FAILURE, "", text, now_us)
        data = events.supervision_data(RECEIVER_LINK_FAILURE, "", alarm_id, link=name)
        repo.publish(events.SUPERVISION_FAILED, "", data, now_us)
        conn.execute(
            update(schema.receiver_link).where(LINK.name == name).values(alarm_id=alarm_id)
        )
        log.warning("receiver link failure", extra={"link": name, "incident_number": alarm_id})
    for name, alarm_id in back:
        text = system_alarms.receiver_link_failure(name)
        Router.restore_alarm(repo, RECEIVER_LINK_FAILURE, alarm_id, "", text, now_us)
        data = events.supervision_data(RECEIVER_LINK_FAILURE, "", alarm_id, link=name)
        repo.publish(events.SUPERVISION_RESTORED, "", data, now_us)
        conn.execute(update(schema.receiver_link).where(LINK.name == name).values(alarm_id=None))
        log.info("receiver link restored", extra={"link": name, "incident_number": alarm_id})
    return len(failed) + len(back)
