"""The service layer of the alarm life cycle: operators, console sign-in, and every action on an
alarm, each applied in the caller's write transaction with the rules of ``core.operations``.

Two operators never get the same alarm: taking one is a conditional UPDATE (``WHERE state =
'pending'``) whose row count says who won, which holds across processes and nodes sharing one
database. Every action writes an OPERATOR record to history and bumps the queue revision, so
consoles and XMAPEND/XMAINPRO see it at once.
"""

from __future__ import annotations

import functools
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import Connection, bindparam, delete, func, insert, select, update
from sqlalchemy.engine import Engine

from alarmhub import clock
from alarmhub.core import operations as ops
from alarmhub.core.operations import Action, AlarmState, Operator, Refusal, Role
from alarmhub.core.router import RoutePath
from alarmhub.core.tokens import token_hash
from alarmhub.store import provisioning, queries
from alarmhub.store import schema as s
from alarmhub.store.commit import allocate_incidents, lock_incidents
from alarmhub.store.engine import write_transaction

T = TypeVar("T")
SESSION_HOURS = 12
HANDED_PER_PASS = 50
_hasher = PasswordHasher()
a = s.alarm.c
o = s.operator.c


@functools.cache
def _dummy_hash() -> str:
    """A hash that unknown operators' passwords are checked against (equal work for them),
    made at its first use: an Argon2 hash costs about 0.1 s, too much for every import."""
    return _hasher.hash(secrets.token_hex(16))


def run(engine: Engine, work: Callable[[Connection], T]) -> T:
    """Run ``work`` in one write transaction. A refusal rolls it back, unless the refusal is
    ``recorded``: then what it wrote is committed, and it is raised after."""
    refused: Refusal
    with write_transaction(engine) as conn:
        try:
            return work(conn)
        except Refusal as exc:
            if not exc.recorded:
                raise
            refused = exc
    raise refused


def on_queues(work: Callable[[Connection], T], conn: Connection) -> T:
    """``work`` that may change the alarm queues or number incidents (every operator action),
    after taking the incident counter's lock. Routing and supervision take that lock first too
    (:func:`alarmhub.store.commit.lock_incidents`), so on PostgreSQL an operator's action and a
    routing turn run one after the other instead of each holding a row the other waits for
    (an operator's row against the counter, an alarm against the queue revision): a deadlock,
    which PostgreSQL breaks after a second by failing one of them."""
    lock_incidents(conn)
    return work(conn)


# operators ----------------------------------------------------------------------------------


def hash_password(password: str) -> str:
    problem = ops.password_problem(password)
    if problem:
        raise provisioning.ProvisioningError(problem)
    return _hasher.hash(password)


def add_operator(
    engine: Engine, code: str, name: str, role: str = Role.OPERATOR, password: str | None = None
) -> dict[str, Any]:
    problem = ops.operator_code_problem(code)
    if problem:
        raise provisioning.ProvisioningError(problem)
    if not name.strip() or len(name) > 64:
        raise provisioning.ProvisioningError("operator name must be 1-64 characters")
    if role not in {r.value for r in Role}:
        raise provisioning.ProvisioningError(
            f"invalid role {role!r}: use operator, supervisor or admin"
        )
    password_hash = hash_password(password) if password is not None else None
    with write_transaction(engine) as conn:
        if conn.execute(select(o.code).where(o.code == code)).first():
            raise provisioning.ProvisioningError(f"operator {code!r} already exists")
        created = clock.now_us()
        conn.execute(
            insert(s.operator).values(
                code=code,
                name=name.strip(),
                role=role,
                password_hash=password_hash,
                disabled=False,
                created_us=created,
                receiving=False,
                failed_logins=0,  # of the old lock-out: kept in the schema, no longer used
            )
        )
    return {"code": code, "name": name.strip(), "role": role, "created_us": created}


def list_operators(conn: Connection) -> list[dict[str, Any]]:
    """Every operator with status, without password hashes."""
    in_process = (
        select(func.count())
        .where(a.opr == o.code, a.state == AlarmState.IN_PROCESS)
        .scalar_subquery()
    )
    rows = conn.execute(
        select(
            o.code,
            o.name,
            o.role,
            o.disabled,
            o.created_us,
            o.signed_on_us,
            o.receiving,
            o.status_us,
            (o.password_hash.is_not(None)).label("has_password"),
            in_process.label("in_process"),
        ).order_by(o.code)
    ).mappings()
    return [dict(r) for r in rows]


def set_disabled(engine: Engine, code: str, disabled: bool, now_us: int) -> None:
    """Disable (signs the operator off, ends their sessions, returns their alarms to pending)
    or enable an operator."""
    with write_transaction(engine) as conn:
        lock_incidents(conn)  # it may change the queues: the order of :func:`on_queues`
        operator = load_operator(conn, code)
        if disabled and operator.signed_on:
            sign_off(conn, code, now_us)
        if disabled:
            end_sessions(conn, code)
        conn.execute(update(s.operator).where(o.code == code).values(disabled=disabled))
        provisioning.bump_revision(conn, queries.QUEUE)


def set_password(engine: Engine, code: str, password: str, now_us: int | None = None) -> int:
    """Set an operator's password. Their console sessions end (an old cookie no longer
    works) and, when signed on, they are signed off: their alarms in process go back to
    pending, never left with a console that is gone. How many sessions ended."""
    password_hash = hash_password(password)
    now = now_us if now_us is not None else clock.now_us()
    with write_transaction(engine) as conn:
        lock_incidents(conn)  # it may change the queues: the order of :func:`on_queues`
        operator = load_operator(conn, code)
        conn.execute(update(s.operator).where(o.code == code).values(password_hash=password_hash))
        ended = end_sessions(conn, code)
        if operator.signed_on:
            sign_off(conn, code, now)
    return ended


def end_sessions(conn: Connection, code: str) -> int:
    """End every console session of operator ``code``; how many."""
    cs = s.console_session.c
    return conn.execute(delete(s.console_session).where(cs.operator == code)).rowcount


def load_operator(conn: Connection, code: str) -> Operator:
    row = conn.execute(select(s.operator).where(o.code == code)).mappings().first()
    if row is None:
        raise Refusal("OPS-OPERATOR", f"operator {code!r} does not exist", 404)
    return _operator(row)


def _operator(row: Any) -> Operator:
    return Operator(
        code=row["code"],
        name=row["name"],
        role=Role(row["role"]),
        disabled=bool(row["disabled"]),
        signed_on=row["signed_on_us"] is not None,
        receiving=bool(row["receiving"]),
    )


# resolution codes ---------------------------------------------------------------------------


def resolution_codes(conn: Connection) -> dict[str, str]:
    """The station's resolution codes: the shipped ones with the station's changes."""
    codes = dict(ops.DEFAULT_RESOLUTIONS)
    for code, text in conn.execute(select(s.resolution.c.code, s.resolution.c.text)):
        if text is None:
            codes.pop(code, None)
        else:
            codes[code] = text
    return dict(sorted(codes.items()))


def set_resolution(engine: Engine, code: str, text: str | None, now_us: int) -> None:
    """Add or change a resolution code (``text``), or remove it (``None``)."""
    if text is not None:
        problem = ops.resolution_code_problem(code, text)
        if problem:
            raise provisioning.ProvisioningError(problem)
        text = text.strip()
    with write_transaction(engine) as conn:
        if text is None and code not in resolution_codes(conn):
            raise provisioning.ProvisioningError(f"no resolution code {code!r}")
        conn.execute(delete(s.resolution).where(s.resolution.c.code == code))
        if text is not None or code in ops.DEFAULT_RESOLUTIONS:
            conn.execute(insert(s.resolution).values(code=code, text=text, updated_us=now_us))


def reset_resolution(engine: Engine, code: str) -> None:
    """Back to the shipped text (or gone, for a code the station added)."""
    with write_transaction(engine) as conn:
        conn.execute(delete(s.resolution).where(s.resolution.c.code == code))


# console sign-in ----------------------------------------------------------------------------


SIGN_IN_REFUSED = Refusal("OPS-SIGNIN", "wrong operator code or password", 401)
"""The one answer to a sign-in with an unknown code, a wrong password, or a disabled operator."""


@dataclass(frozen=True, slots=True)
class PasswordCheck:
    """The outcome of checking an operator's password, for :func:`sign_in`; ``reason`` says
    why it did not match, for the log only (``unknown``, ``password``, ``disabled``)."""

    code: str
    matched: bool
    reason: str = ""


def check_password(conn: Connection, code: str, password: str) -> PasswordCheck:
    """Check an operator's password (argon2: about 0.1 s of CPU) on a read connection, outside
    any write transaction, so that signals never wait for it. An unknown operator, one without
    a password, a disabled one and a wrong password take the same work and do not match."""
    row = conn.execute(select(o.password_hash, o.disabled).where(o.code == code)).first()
    if row is None or row.password_hash is None:
        _verify(_dummy_hash(), password)
        return PasswordCheck(code, False, "unknown")
    matched = _verify(row.password_hash, password)
    if not matched:
        return PasswordCheck(code, False, "password")
    if row.disabled:
        return PasswordCheck(code, False, "disabled")
    return PasswordCheck(code, True)


def sign_in(conn: Connection, check: PasswordCheck, now_us: int) -> tuple[Operator, str]:
    """Open a console session for a matched password check (in a write transaction): the
    operator and the session token. Expired sessions of every operator are purged here.

    Anything else is refused with :data:`SIGN_IN_REFUSED`, whatever the reason; failures are
    counted by the console's throttle (``core.sign_in``), not here. The columns
    ``failed_logins`` and ``locked_until_us`` of the old lock-out are no longer used."""
    code = check.code
    if not check.matched:
        raise SIGN_IN_REFUSED
    row = conn.execute(select(s.operator).where(o.code == code)).mappings().first()
    if row is None or row["password_hash"] is None or row["disabled"]:  # changed meanwhile
        raise SIGN_IN_REFUSED
    purge_sessions(conn, now_us)
    token = secrets.token_urlsafe(32)
    conn.execute(
        insert(s.console_session).values(
            token_hash=token_hash(token),
            operator=code,
            created_us=now_us,
            expires_us=now_us + SESSION_HOURS * 3600 * 1_000_000,
        )
    )
    return _operator(row), token


def purge_sessions(conn: Connection, now_us: int) -> int:
    """Delete expired console sessions (of every operator); how many."""
    cs = s.console_session.c
    return conn.execute(delete(s.console_session).where(cs.expires_us <= now_us)).rowcount


def _verify(password_hash: str, password: str) -> bool:
    try:
        return _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


def session_operator(conn: Connection, token: str, now_us: int) -> Operator | None:
    """The operator of a live console session, or None."""
    cs = s.console_session.c
    row = (
        conn.execute(
            select(s.operator)
            .join(s.console_session, cs.operator == o.code)
            .where(cs.token_hash == token_hash(token), cs.expires_us > now_us)
        )
        .mappings()
        .first()
    )
    if row is None or row["disabled"]:
        return None
    return _operator(row)


def end_session(conn: Connection, token: str) -> None:
    conn.execute(
        delete(s.console_session).where(s.console_session.c.token_hash == token_hash(token))
    )


# receiving status ---------------------------------------------------------------------------


def sign_on(conn: Connection, code: str, now_us: int, receiving: bool = True) -> None:
    operator = load_operator(conn, code)
    if operator.disabled:
        raise Refusal("OPS-DISABLED", f"operator {code} is disabled", 403)
    if not operator.signed_on:
        conn.execute(
            update(s.operator)
            .where(o.code == code)
            .values(signed_on_us=now_us, receiving=receiving, status_us=now_us)
        )
        _record(conn, code, Action.SIGN_ON, now_us)
        if receiving:
            hand_out(conn, now_us, only=code)
    elif operator.receiving != receiving:
        set_receiving(conn, code, receiving, now_us)
    provisioning.bump_revision(conn, queries.QUEUE)


def sign_off(conn: Connection, code: str, now_us: int) -> int:
    """Sign off; alarms still in process with the operator go back to pending (nothing is left
    with nobody). How many went back."""
    load_operator(conn, code)
    returned = conn.execute(
        select(s.alarm).where(a.opr == code, a.state == AlarmState.IN_PROCESS)
    ).mappings()
    rows = [dict(r) for r in returned]
    for row in rows:
        conn.execute(
            update(s.alarm)
            .where(a.alarm_id == row["alarm_id"])
            .values(state=AlarmState.PENDING, opr=None)
        )
        _record(conn, code, Action.SIGN_OFF, now_us, row, "ALARM BACK TO PENDING")
    conn.execute(
        update(s.operator)
        .where(o.code == code)
        .values(signed_on_us=None, receiving=False, status_us=now_us)
    )
    _record(conn, code, Action.SIGN_OFF, now_us)
    provisioning.bump_revision(conn, queries.QUEUE)
    if rows:
        hand_out(conn, now_us)
    return len(rows)


def set_receiving(conn: Connection, code: str, receiving: bool, now_us: int) -> None:
    operator = load_operator(conn, code)
    ops.check_active(operator)
    if operator.receiving == receiving:
        return
    conn.execute(
        update(s.operator).where(o.code == code).values(receiving=receiving, status_us=now_us)
    )
    _record(conn, code, Action.RECEIVING if receiving else Action.NOT_RECEIVING, now_us)
    provisioning.bump_revision(conn, queries.QUEUE)
    if receiving:
        hand_out(conn, now_us, only=code)


# taking alarms ------------------------------------------------------------------------------


def _held(conn: Connection, alarm_id: int) -> ops.AlarmHeld | None:
    row = conn.execute(select(a.alarm_id, a.state, a.opr).where(a.alarm_id == alarm_id)).first()
    return ops.AlarmHeld(row.alarm_id, row.state, row.opr) if row else None


def take(conn: Connection, code: str, alarm_id: int, now_us: int) -> dict[str, Any]:
    """An operator picks alarm ``alarm_id`` from pending."""
    operator = load_operator(conn, code)
    ops.check_take(operator, _held(conn, alarm_id), alarm_id)
    row = _claim(conn, code, alarm_id, now_us)
    if row is None:  # another operator got it between the read and the update
        ops.check_take(operator, _held(conn, alarm_id), alarm_id)
        raise Refusal("OPS-TAKEN", f"alarm {alarm_id} is already taken")
    _record(conn, code, Action.TAKE, now_us, row)
    provisioning.bump_revision(conn, queries.QUEUE)
    return row


def take_next(conn: Connection, code: str, now_us: int) -> dict[str, Any] | None:
    """An operator takes the next pending alarm (PRIORITY, then oldest); None when pending is
    empty."""
    ops.check_active(load_operator(conn, code))
    row = _claim_next(conn, code, now_us)
    if row is not None:
        _record(conn, code, Action.TAKE, now_us, row)
        provisioning.bump_revision(conn, queries.QUEUE)
    return row


def _claim(conn: Connection, code: str, alarm_id: int, now_us: int) -> dict[str, Any] | None:
    """The conditional update that decides who gets an alarm: only one caller sees a row."""
    claimed = conn.execute(
        update(s.alarm)
        .where(a.alarm_id == alarm_id, a.state == AlarmState.PENDING)
        .values(state=AlarmState.IN_PROCESS, opr=code, taken_us=now_us, hold_until_us=None)
    ).rowcount
    return queries.alarm(conn, alarm_id) if claimed == 1 else None


def _claim_next(conn: Connection, code: str, now_us: int) -> dict[str, Any] | None:
    for _ in range(5):  # each miss means another operator won that alarm; try the next
        candidates = conn.execute(
            select(a.alarm_id)
            .where(a.state == AlarmState.PENDING)
            .order_by(a.priority, a.pending_us, a.alarm_id)
            .limit(5)
        ).scalars()
        ids = list(candidates)
        if not ids:
            return None
        for alarm_id in ids:
            row = _claim(conn, code, alarm_id, now_us)
            if row is not None:
                return row
    return None


_RECEIVING = (
    o.signed_on_us.is_not(None),
    o.receiving.is_(True),
    o.disabled.is_(False),
)
_ANYONE_RECEIVING = select(o.code).where(*_RECEIVING).limit(1)
_IDLE = (
    select(o.code)
    .where(
        *_RECEIVING,
        o.code.not_in(
            select(a.opr).where(a.state == AlarmState.IN_PROCESS, a.opr.is_not(None)).distinct()
        ),
    )
    .order_by(func.coalesce(o.status_us, 0), o.code)
    .limit(HANDED_PER_PASS)
)


def hand_out(conn: Connection, now_us: int, only: str | None = None) -> list[tuple[str, int]]:
    """Hand the next pending alarms to idle receiving operators, the longest idle first;
    the (operator, alarm) pairs handed. ``only`` limits it to one operator. It runs with every
    group commit that raises alarms, so it first asks cheaply whether anyone receives at all."""
    if conn.execute(_ANYONE_RECEIVING).first() is None:
        return []
    query = _IDLE if only is None else _IDLE.where(o.code == only)
    handed: list[tuple[str, int]] = []
    for code in list(conn.execute(query).scalars()):
        # lock the operator's row (PostgreSQL) and check again that they are still idle
        conn.execute(select(o.code).where(o.code == code).with_for_update()).first()
        still_busy = conn.execute(
            select(func.count()).where(a.opr == code, a.state == AlarmState.IN_PROCESS)
        ).scalar_one()
        if still_busy:
            continue
        row = _claim_next(conn, code, now_us)
        if row is None:
            break  # pending is empty
        conn.execute(update(s.operator).where(o.code == code).values(status_us=now_us))
        _record(conn, code, Action.HANDED, now_us, row)
        handed.append((code, row["alarm_id"]))
    if handed:
        provisioning.bump_revision(conn, queries.QUEUE)
    return handed


# working an alarm ---------------------------------------------------------------------------


def _holding(conn: Connection, code: str, alarm_id: int) -> tuple[Operator, dict[str, Any]]:
    operator = load_operator(conn, code)
    ops.check_holding(operator, _held(conn, alarm_id), alarm_id)
    row = queries.alarm(conn, alarm_id)
    assert row is not None
    return operator, row


def log_call(conn: Connection, code: str, alarm_id: int, text: str, now_us: int) -> None:
    """Log a call made for the alarm (who, number, outcome); the first sets OPR_FIRST_CALL."""
    cleaned = ops.check_note(text, "call")
    _, row = _holding(conn, code, alarm_id)
    if row["first_call_us"] is None:
        conn.execute(update(s.alarm).where(a.alarm_id == alarm_id).values(first_call_us=now_us))
    _record(conn, code, Action.CALL, now_us, row, cleaned)
    provisioning.bump_revision(conn, queries.QUEUE)


def add_note(conn: Connection, code: str, alarm_id: int, text: str, now_us: int) -> None:
    cleaned = ops.check_note(text)
    _, row = _holding(conn, code, alarm_id)
    _record(conn, code, Action.NOTE, now_us, row, cleaned)
    provisioning.bump_revision(conn, queries.QUEUE)  # consoles with the alarm open see it


def hold(conn: Connection, code: str, alarm_id: int, minutes: int, reason: str, now_us: int) -> int:
    """Put the alarm on hold for ``minutes``; it returns to pending, marked BEEN_ON_HOLD, when
    the time is up. The time it returns."""
    cleaned = ops.check_hold(minutes, reason)
    _, row = _holding(conn, code, alarm_id)
    until = ops.hold_until(now_us, minutes)
    conn.execute(
        update(s.alarm)
        .where(a.alarm_id == alarm_id)
        .values(state=AlarmState.ON_HOLD, hold_until_us=until, hold_reason=cleaned)
    )
    _record(conn, code, Action.HOLD, now_us, row, f"{minutes} MIN {cleaned}")
    provisioning.bump_revision(conn, queries.QUEUE)
    hand_out(conn, now_us, only=code)
    return until


def end_holds(conn: Connection, now_us: int) -> int:
    """Held alarms whose time is up go back to pending, marked BEEN_ON_HOLD; how many."""
    due = conn.execute(
        select(s.alarm).where(a.state == AlarmState.ON_HOLD, a.hold_until_us <= now_us)
    ).mappings()
    rows = [dict(r) for r in due]
    for row in rows:
        conn.execute(
            update(s.alarm)
            .where(a.alarm_id == row["alarm_id"], a.state == AlarmState.ON_HOLD)
            .values(state=AlarmState.PENDING, opr=None, been_on_hold=True, hold_until_us=None)
        )
        _record(conn, row["opr"] or "", Action.HOLD_ENDED, now_us, row)
    if rows:
        provisioning.bump_revision(conn, queries.QUEUE)
        hand_out(conn, now_us)
    return len(rows)


def take_over(conn: Connection, code: str, alarm_id: int, now_us: int) -> dict[str, Any]:
    """A supervisor takes an in-process or held alarm from another operator."""
    operator = load_operator(conn, code)
    held = ops.check_take_over(operator, _held(conn, alarm_id), alarm_id)
    changed = conn.execute(
        update(s.alarm)
        .where(a.alarm_id == alarm_id, a.state == held.state, a.opr == held.opr)
        .values(state=AlarmState.IN_PROCESS, opr=code, hold_until_us=None)
    ).rowcount
    if changed != 1:
        raise Refusal("OPS-STATE", f"alarm {alarm_id} changed meanwhile; try again")
    row = queries.alarm(conn, alarm_id)
    assert row is not None
    _record(conn, code, Action.TAKE_OVER, now_us, row, f"FROM {held.opr or '-'}")
    provisioning.bump_revision(conn, queries.QUEUE)
    return row


def resolve(
    conn: Connection, code: str, alarm_id: int, resolution: str, note: str, now_us: int
) -> None:
    """Resolve the alarm: it leaves the queues; its resolution, operator and handling times
    go to history."""
    resolution = resolution.strip().upper()
    text = ops.check_resolution(resolution, resolution_codes(conn))
    note = note.strip()
    if len(note) > ops.NOTE_MAX:
        raise Refusal("OPS-NOTE", f"note longer than {ops.NOTE_MAX} characters", 422)
    _, row = _holding(conn, code, alarm_id)
    conn.execute(
        update(s.alarm)
        .where(a.alarm_id == alarm_id)
        .values(state=AlarmState.RESOLVED, resolved_us=now_us, resolution=resolution)
    )
    times = ops.handling_times(row["pending_us"], row["taken_us"], row["first_call_us"], now_us)
    summary = ", ".join(f"{name} {value}" for name, value in times.items())
    full = f"{resolution} {text}; {summary}" + (f"; {note}" if note else "")
    _record(conn, code, Action.RESOLVE, now_us, row, f"{resolution} {text}", note=full)
    provisioning.bump_revision(conn, queries.QUEUE)
    hand_out(conn, now_us, only=code)


# the audit trail ----------------------------------------------------------------------------


def _record(
    conn: Connection,
    code: str,
    action: Action,
    now_us: int,
    row: Mapping[str, Any] | None = None,
    detail: str = "",
    note: str | None = None,
) -> None:
    """One OPERATOR record in history: the action, who, when, on which alarm."""
    if row is None:
        number = allocate_incidents(conn, 1)
        where: Mapping[str, Any] = {
            "account_number": "", "code": "", "event_code": "", "area": "", "zone": "",
            "priority": "z", "color": "", "source": "", "destination": "", "dnis": "",
            "panel": "",
        }  # fmt: skip
        alarm_id = None
    else:
        number = alarm_id = row["alarm_id"]
        where = row
    conn.execute(
        insert(s.history).values(
            account_number=where["account_number"],
            incident_number=number,
            received_us=now_us,
            code=where["code"],
            event_code=where["event_code"],
            area=where["area"],
            zone=where["zone"],
            type=action.value,
            opr=code or None,
            alarm_category="O",
            priority=where["priority"],
            hist_text=ops.audit_text(action, code or "-", detail),
            am_notify="N",
            pr_checksum=RoutePath.OPERATOR.value,
            second_zone_is="N",
            color=where["color"],
            video="N",
            alarm_id=alarm_id,
            source=where["source"],
            destination=where["destination"],
            dnis=where["dnis"],
            panel=where["panel"],
            note=note if note is not None else (detail or None),
        )
    )


# what consoles and XMAINPRO read ------------------------------------------------------------


def operator_statuses(conn: Connection) -> list[dict[str, Any]]:
    """Signed-on operators with their receiving status and colour (XMAINPRO status records)."""
    rows = conn.execute(
        select(o.code, o.name, o.receiving, o.signed_on_us, o.status_us)
        .where(o.signed_on_us.is_not(None), o.disabled.is_(False))
        .order_by(o.code)
    ).mappings()
    out = []
    for r in rows:
        status = ops.Receiving.RECEIVING if r["receiving"] else ops.Receiving.NOT_RECEIVING
        out.append({**dict(r), "status": status.value, "color": ops.RECEIVING_COLOR[status]})
    return out


_JOIN_SLACK_US = 60 * 1_000_000


def alarm_detail(conn: Connection, alarm_id: int, history_limit: int = 50) -> dict[str, Any]:
    """Everything the alarm screen shows: the alarm, its account, the signals and actions of
    this alarm (restores included) and the account's recent history."""
    row = queries.alarm(conn, alarm_id)
    if row is None:
        raise ops.not_found(alarm_id)
    account = None
    if row["account_number"]:
        found = (
            conn.execute(
                select(s.account).where(s.account.c.account_number == row["account_number"])
            )
            .mappings()
            .first()
        )
        account = dict(found) if found else None
    h = s.history.c
    # the alarm's own events carry its incident number; restorals linked to it are on the
    # same account: both found through indexes, never by reading all of history
    mine = (h.incident_number == alarm_id) | (
        (h.account_number == row["account_number"]) & (h.alarm_id == alarm_id)
    )
    if row["path"] == "UNKNOWN":  # signals of other unknown accounts that joined it (DC-09)
        joined = (h.incident_number > alarm_id) & (h.alarm_id == alarm_id)
        if row["resolved_us"] is not None:  # none joined after it was resolved (clock slack)
            after = _first_signal_since(conn, row["resolved_us"] + _JOIN_SLACK_US)
            if after is not None:
                joined = joined & (h.incident_number < after)
        mine = mine | (joined & (h.pr_checksum == "UNKNOWN"))
    of_alarm = conn.execute(
        select(s.history).where(mine).order_by(h.received_us, h.event_id)
    ).mappings()
    recent: list[dict[str, Any]] = []
    if row["account_number"]:
        recent = [
            dict(r)
            for r in conn.execute(
                select(s.history)
                .where(h.account_number == row["account_number"])
                .order_by(h.received_us.desc(), h.event_id.desc())
                .limit(history_limit)
            ).mappings()
        ]
    return {
        "alarm": row,
        "account": account,
        "events": [dict(r) for r in of_alarm],
        "history": recent,
    }


def _first_signal_since(conn: Connection, start_us: int) -> int | None:
    """The incident number of the first signal received at or after ``start_us``, found by
    bisecting incident numbers (stored in receive order) with primary-key lookups, so that
    counting recent signals reads only them, not the whole table. None when there is none."""
    sig = s.signal.c
    low, high = conn.execute(
        select(func.min(sig.incident_number), func.max(sig.incident_number))
    ).one()
    if high is None:
        return None
    at = select(sig.received_us).where(sig.incident_number >= bindparam("n"))
    at = at.order_by(sig.incident_number).limit(1)
    if conn.execute(at, {"n": high}).scalar_one() < start_us:
        return None
    while low < high:  # the smallest number whose next stored signal is recent enough
        middle = (low + high) // 2
        if conn.execute(at, {"n": middle}).scalar_one() >= start_us:
            high = middle
        else:
            low = middle + 1
    return int(low)


def signals_per_minute(conn: Connection, now_us: int, minutes: int = 60) -> list[int]:
    """Signals received in each of the last ``minutes`` minutes, oldest first."""
    start = now_us - minutes * 60_000_000
    counts = [0] * minutes
    first = _first_signal_since(conn, start)
    if first is None:
        return counts
    sig = s.signal.c
    bucket = (sig.received_us - start) / 60_000_000
    rows = conn.execute(
        select(func.floor(bucket).label("m"), func.count())
        .where(sig.incident_number >= first, sig.received_us >= start, sig.received_us < now_us)
        .group_by("m")
    ).all()
    for minute, count in rows:
        index = int(minute)
        if 0 <= index < minutes:
            counts[index] = int(count)
    return counts
