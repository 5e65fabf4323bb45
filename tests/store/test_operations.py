"""The alarm life cycle (``core.operations`` rules, ``store.operations`` service layer) on a real
SQLite database: every transition and its refusals, hand-out to idle operators, holds that
return, the audit trail in history, console sign-in with lock-out, and XMAINPRO's records.

Alarms are made the way the node makes them: signals committed, then routed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update
from sqlalchemy.engine import Engine

from alarmhub.core import operations as ops
from alarmhub.core.account import Account
from alarmhub.core.errors import ActionRefused, ProvisioningError
from alarmhub.core.operations import Action, AlarmState
from alarmhub.core.router import RoutePath
from alarmhub.core.sign_in import session_expires_us
from alarmhub.core.tokens import token_hash
from alarmhub.store import (
    dispatch,
    handling,
    operator_access,
    operators,
    provisioning,
    queries,
    resolutions,
    sessions,
    statistics,
)
from alarmhub.store import schema as s
from alarmhub.store.engine import write_transaction
from alarmhub.store.supervision import Supervision
from alarmhub.xm import fields
from alarmhub.xm.methods import xmainpro
from tests.support.store_station import (
    MINUTE,
    PASSWORD,
    SECOND,
    T0,
    act,
    alarm,
    route,
    station,
)

ACCOUNT = "700012"


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    with station(tmp_path, {ACCOUNT: "Acme Widgets"}) as engine:
        yield engine


def raise_alarms(
    engine: Engine, *codes: str, at_us: int = T0, zone: int = 1, panel: str = "12"
) -> list[int]:
    """Commit and route one signal per code (distinct zones) of account 70``panel``; the alarm
    ids (incident numbers)."""
    signals = [(f"70{panel}", code, f"{zone + i:03d}") for i, code in enumerate(codes)]
    return route(engine, signals, at_us)


def operator_records(engine: Engine, alarm_id: int | None = None) -> list[dict[str, Any]]:
    h = s.history.c
    query = select(s.history).where(h.pr_checksum == RoutePath.OPERATOR.value)
    if alarm_id is not None:
        query = query.where(h.alarm_id == alarm_id)
    with engine.connect() as conn:
        return [dict(r) for r in conn.execute(query.order_by(h.event_id)).mappings()]


def refusal(work: Any) -> ActionRefused:
    with pytest.raises(ActionRefused) as caught:
        work()
    return caught.value


def signed_on(engine: Engine, *codes: str, receiving: bool = False) -> None:
    for code in codes:
        act(engine, lambda c, code=code: handling.sign_on(c, code, T0, receiving=receiving))


# take --------------------------------------------------------------------------------------


def test_take_moves_a_pending_alarm_in_process(engine: Engine) -> None:
    (alarm_id,) = raise_alarms(engine, "E130")
    signed_on(engine, "001")
    row = act(engine, lambda c: handling.take(c, "001", alarm_id, T0 + 5 * SECOND))
    assert row["state"] == AlarmState.IN_PROCESS
    assert (row["opr"], row["taken_us"]) == ("001", T0 + 5 * SECOND)
    with engine.connect() as conn:
        assert queries.pending_alarms(conn) == []
        assert [r["alarm_id"] for r in queries.in_process_alarms(conn)] == [alarm_id]
    (record,) = [r for r in operator_records(engine, alarm_id) if r["type"] == Action.TAKE]
    assert record["opr"] == "001"
    assert record["hist_text"] == "OPR 001 TOOK ALARM"
    assert record["account_number"] == ACCOUNT


def test_an_alarm_already_taken_cannot_be_taken_again(engine: Engine) -> None:
    (alarm_id,) = raise_alarms(engine, "E130")
    signed_on(engine, "001", "002")
    act(engine, lambda c: handling.take(c, "001", alarm_id, T0))
    refused = refusal(lambda: act(engine, lambda c: handling.take(c, "002", alarm_id, T0)))
    assert refused.code == "OPS-TAKEN"
    assert "already taken by operator 001" in refused.message
    assert alarm(engine, alarm_id)["opr"] == "001"


def test_take_refusals(engine: Engine) -> None:
    (alarm_id,) = raise_alarms(engine, "E130")
    # not signed on
    assert refusal(lambda: act(engine, lambda c: handling.take(c, "001", alarm_id, T0))).code == (
        "OPS-SIGNON"
    )
    signed_on(engine, "001")
    assert refusal(lambda: act(engine, lambda c: handling.take(c, "001", 999, T0))).status == 404
    assert refusal(lambda: act(engine, lambda c: handling.take(c, "XYZ", alarm_id, T0))).code == (
        "OPS-OPERATOR"
    )
    assert alarm(engine, alarm_id)["state"] == AlarmState.PENDING


def test_take_next_follows_priority_then_age(engine: Engine) -> None:
    opening = raise_alarms(engine, "E130", at_us=T0)[0]  # burglary, priority C, older
    fire = raise_alarms(engine, "E110", at_us=T0 + SECOND, zone=50)[0]  # fire, priority A
    signed_on(engine, "001")
    first = act(engine, lambda c: handling.take_next(c, "001", T0 + 2 * SECOND))
    second = act(engine, lambda c: handling.take_next(c, "001", T0 + 3 * SECOND))
    third = act(engine, lambda c: handling.take_next(c, "001", T0 + 4 * SECOND))
    assert (first["alarm_id"], second["alarm_id"], third) == (fire, opening, None)


# hand-out ----------------------------------------------------------------------------------


def test_an_idle_receiving_operator_is_handed_the_next_alarm(engine: Engine) -> None:
    signed_on(engine, "001", receiving=True)
    fire, burglary = raise_alarms(engine, "E110", "E130")  # routing hands out at once
    assert alarm(engine, fire)["opr"] == "001"
    assert alarm(engine, burglary)["state"] == AlarmState.PENDING, "one alarm at a time"
    records = [r["type"] for r in operator_records(engine, fire)]
    assert records == [Action.HANDED]
    # resolving it hands the next one
    act(engine, lambda c: dispatch.dispatch(c, "001", fire, "fire", 1, "", T0 + MINUTE))
    act(engine, lambda c: handling.resolve(c, "001", fire, "DISPF", "", T0 + MINUTE))
    assert alarm(engine, burglary)["opr"] == "001"


def test_operators_not_receiving_are_not_handed_alarms(engine: Engine) -> None:
    signed_on(engine, "001", receiving=False)
    (alarm_id,) = raise_alarms(engine, "E130")
    assert alarm(engine, alarm_id)["state"] == AlarmState.PENDING
    act(engine, lambda c: handling.set_receiving(c, "001", True, T0 + SECOND))
    assert alarm(engine, alarm_id)["opr"] == "001"


# working an alarm --------------------------------------------------------------------------


def test_call_note_and_their_refusals(engine: Engine) -> None:
    (alarm_id,) = raise_alarms(engine, "E130")
    signed_on(engine, "001", "002")
    act(engine, lambda c: handling.take(c, "001", alarm_id, T0 + 10 * SECOND))
    act(engine, lambda c: handling.log_call(c, "001", alarm_id, "555-0100 owner, no answer",
                                               T0 + 40 * SECOND))  # fmt: skip
    act(engine, lambda c: handling.log_call(c, "001", alarm_id, "555-0101 keyholder",
                                               T0 + 90 * SECOND))  # fmt: skip
    assert alarm(engine, alarm_id)["first_call_us"] == T0 + 40 * SECOND, "the first call counts"
    act(engine, lambda c: handling.add_note(c, "001", alarm_id, "dog inside", T0 + 95 * SECOND))
    notes = [(r["type"], r["note"]) for r in operator_records(engine, alarm_id)]
    assert notes[1:] == [
        (Action.CALL, "555-0100 owner, no answer"),
        (Action.CALL, "555-0101 keyholder"),
        (Action.NOTE, "dog inside"),
    ]
    other = refusal(lambda: act(engine, lambda c: handling.add_note(c, "002", alarm_id, "x", T0)))
    assert other.code == "OPS-NOTYOURS"
    empty = refusal(lambda: act(engine, lambda c: handling.log_call(c, "001", alarm_id, " ", T0)))
    assert empty.code == "OPS-NOTE"
    long = "x" * (ops.NOTE_MAX + 1)
    too_long = refusal(lambda: act(engine, lambda c: handling.add_note(c, "001", alarm_id, long,
                                                                          T0)))  # fmt: skip
    assert too_long.status == 422


def test_hold_returns_to_pending_marked_been_on_hold(engine: Engine) -> None:
    (alarm_id,) = raise_alarms(engine, "E130")
    signed_on(engine, "001")
    act(engine, lambda c: handling.take(c, "001", alarm_id, T0))
    until = act(engine, lambda c: handling.hold(c, "001", alarm_id, 10, "waiting for police", T0))
    assert until == T0 + 10 * MINUTE
    held = alarm(engine, alarm_id)
    assert (held["state"], held["hold_reason"]) == (AlarmState.ON_HOLD, "waiting for police")
    assert act(engine, lambda c: handling.end_holds(c, until - 1)) == 0, "not before its time"
    assert act(engine, lambda c: handling.end_holds(c, until)) == 1
    back = alarm(engine, alarm_id)
    assert (back["state"], back["opr"], back["been_on_hold"]) == (AlarmState.PENDING, None, True)
    assert back["pending_us"] == held["pending_us"], "it keeps its place by age"
    types = [r["type"] for r in operator_records(engine, alarm_id)]
    assert types == [Action.TAKE, Action.HOLD, Action.HOLD_ENDED]


@pytest.mark.parametrize(
    ("minutes", "reason", "code"),
    [(0, "x", "OPS-HOLD"), (-5, "x", "OPS-HOLD"), (ops.HOLD_MINUTES_MAX + 1, "x", "OPS-HOLD"),
     (5, "   ", "OPS-HOLD")],
)  # fmt: skip
def test_hold_refusals(engine: Engine, minutes: int, reason: str, code: str) -> None:
    (alarm_id,) = raise_alarms(engine, "E130")
    signed_on(engine, "001")
    act(engine, lambda c: handling.take(c, "001", alarm_id, T0))
    refused = refusal(
        lambda: act(engine, lambda c: handling.hold(c, "001", alarm_id, minutes, reason, T0))
    )
    assert refused.code == code
    assert alarm(engine, alarm_id)["state"] == AlarmState.IN_PROCESS, "nothing changed"


def test_hold_needs_the_alarm_in_process_with_you(engine: Engine) -> None:
    (alarm_id,) = raise_alarms(engine, "E130")
    signed_on(engine, "001")
    refused = refusal(
        lambda: act(engine, lambda c: handling.hold(c, "001", alarm_id, 5, "why", T0))
    )
    assert refused.code == "OPS-NOTYOURS"
    assert "it is pending" in refused.message


def test_supervisor_takes_over_and_operators_cannot(engine: Engine) -> None:
    (alarm_id,) = raise_alarms(engine, "E130")
    signed_on(engine, "001", "002", "SUP")
    act(engine, lambda c: handling.take(c, "001", alarm_id, T0))
    refused = refusal(lambda: act(engine, lambda c: handling.take_over(c, "002", alarm_id, T0)))
    assert (refused.code, refused.status) == ("OPS-ROLE", 403)
    row = act(engine, lambda c: handling.take_over(c, "SUP", alarm_id, T0 + SECOND))
    assert (row["state"], row["opr"]) == (AlarmState.IN_PROCESS, "SUP")
    (record,) = [r for r in operator_records(engine, alarm_id) if r["type"] == Action.TAKE_OVER]
    assert record["hist_text"] == "OPR SUP TOOK OVER ALARM: FROM 001"
    # the former operator can no longer work it
    assert refusal(
        lambda: act(engine, lambda c: handling.add_note(c, "001", alarm_id, "x", T0))
    ).code == ("OPS-NOTYOURS")
    # nothing to take over on a pending alarm
    (other,) = raise_alarms(engine, "E130", zone=90)
    assert refusal(lambda: act(engine, lambda c: handling.take_over(c, "SUP", other, T0))).code == (
        "OPS-STATE"
    )


# resolve -----------------------------------------------------------------------------------


def test_resolve_writes_resolution_operator_and_times_to_history(engine: Engine) -> None:
    (alarm_id,) = raise_alarms(engine, "E130")
    signed_on(engine, "001")
    pending_us = alarm(engine, alarm_id)["pending_us"]
    act(engine, lambda c: handling.take(c, "001", alarm_id, pending_us + 12 * SECOND))
    act(engine, lambda c: handling.log_call(c, "001", alarm_id, "owner", pending_us + 72 * SECOND))
    act(engine, lambda c: handling.resolve(c, "001", alarm_id, "fa", "owner set it off",
                                              pending_us + 5 * MINUTE))  # fmt: skip
    row = alarm(engine, alarm_id)
    assert (row["state"], row["resolution"]) == (AlarmState.RESOLVED, "FA")
    with engine.connect() as conn:
        assert queries.pending_alarms(conn) == [] and queries.in_process_alarms(conn) == []
    (record,) = [r for r in operator_records(engine, alarm_id) if r["type"] == Action.RESOLVE]
    assert record["opr"] == "001"
    assert record["hist_text"] == "OPR 001 RESOLVED: FA FALSE ALARM - USER ERROR"
    assert record["note"] == (
        "FA FALSE ALARM - USER ERROR; PEND_TIME 00:05:00, OPR_RECEIVED 00:00:12, "
        "OPR_FIRST_CALL 00:01:00, OPR_HANDLING 00:04:48; owner set it off"
    )


def test_resolve_refusals(engine: Engine) -> None:
    (alarm_id,) = raise_alarms(engine, "E130")
    signed_on(engine, "001", "002")
    not_held = refusal(
        lambda: act(engine, lambda c: handling.resolve(c, "001", alarm_id, "FA", "", T0))
    )
    assert not_held.code == "OPS-NOTYOURS"
    act(engine, lambda c: handling.take(c, "001", alarm_id, T0))
    assert refusal(
        lambda: act(engine, lambda c: handling.resolve(c, "002", alarm_id, "FA", "", T0))
    ).code == ("OPS-NOTYOURS")
    unknown = refusal(
        lambda: act(engine, lambda c: handling.resolve(c, "001", alarm_id, "NOPE", "", T0))
    )
    assert (unknown.code, unknown.status) == ("OPS-RESOLUTION", 422)
    act(engine, lambda c: handling.resolve(c, "001", alarm_id, "FA", "", T0))
    again = refusal(
        lambda: act(engine, lambda c: handling.resolve(c, "001", alarm_id, "FA", "", T0))
    )
    assert again.code == "OPS-NOTYOURS" and "resolved" in again.message


def test_station_resolution_codes(engine: Engine) -> None:
    resolutions.set_resolution(engine, "POL", "POLICE ON SITE", T0)
    resolutions.set_resolution(engine, "TEST", None, T0)
    resolutions.set_resolution(engine, "FA", "FALSE ALARM", T0)
    with engine.connect() as conn:
        codes = resolutions.resolution_codes(conn)
    assert codes["POL"] == "POLICE ON SITE" and codes["FA"] == "FALSE ALARM"
    assert "TEST" not in codes
    resolutions.reset_resolution(engine, "FA")
    resolutions.reset_resolution(engine, "TEST")
    with engine.connect() as conn:
        codes = resolutions.resolution_codes(conn)
    assert codes["FA"] == ops.DEFAULT_RESOLUTIONS["FA"] and "TEST" in codes
    with pytest.raises(ProvisioningError, match="invalid resolution code"):
        resolutions.set_resolution(engine, "bad code", "x", T0)


# sign on / off -----------------------------------------------------------------------------


def test_sign_off_returns_alarms_in_process_to_pending(engine: Engine) -> None:
    (alarm_id,) = raise_alarms(engine, "E130")
    signed_on(engine, "001")
    act(engine, lambda c: handling.take(c, "001", alarm_id, T0))
    assert act(engine, lambda c: handling.sign_off(c, "001", T0 + SECOND)) == 1
    row = alarm(engine, alarm_id)
    assert (row["state"], row["opr"]) == (AlarmState.PENDING, None)
    with engine.connect() as conn:
        assert queries.operator_statuses(conn) == []


def test_disabled_operator_is_signed_off_and_refused(engine: Engine) -> None:
    (alarm_id,) = raise_alarms(engine, "E130")
    signed_on(engine, "001")
    act(engine, lambda c: handling.take(c, "001", alarm_id, T0))
    operator_access.set_disabled(engine, "001", True, T0 + SECOND)
    assert alarm(engine, alarm_id)["state"] == AlarmState.PENDING
    refused = refusal(lambda: act(engine, lambda c: handling.sign_on(c, "001", T0)))
    assert refused.code == "OPS-DISABLED"
    operator_access.set_disabled(engine, "001", False, T0 + 2 * SECOND)
    signed_on(engine, "001")


# console sign-in ---------------------------------------------------------------------------


def sign_in(engine: Engine, code: str, password: str, now: int) -> tuple[ops.Operator, str]:
    """As the console does it: the password checked on a read connection, then recorded."""
    with engine.connect() as conn:
        check = sessions.check_password(conn, code, password)
    return act(engine, lambda c: sessions.sign_in(c, check, now))  # type: ignore[no-any-return]


def test_sign_in_and_sessions(engine: Engine) -> None:
    operator, token = sign_in(engine, "001", PASSWORD, T0)
    assert operator.code == "001"
    with engine.connect() as conn:
        found = sessions.session_operator(conn, token, T0 + SECOND)
        assert found is not None and found.code == "001"
        assert sessions.session_operator(conn, token + "x", T0) is None
        expired = session_expires_us(T0)
        assert sessions.session_operator(conn, token, expired) is None
        stored = conn.execute(select(s.console_session.c.token_hash)).scalars().all()
    assert token not in stored, "only a hash of the cookie is kept"
    for _ in range(6):  # no lock-out here: the console throttles (core.sign_in)
        bad = refusal(lambda: sign_in(engine, "001", "wrong!!!", T0))
        assert (bad.code, bad.status) == ("OPS-SIGNIN", 401)
    sign_in(engine, "001", PASSWORD, T0)
    unknown = refusal(lambda: sign_in(engine, "ZZZ", PASSWORD, T0))
    assert unknown.message == bad.message, "unknown operator and wrong password look the same"
    act(engine, lambda c: sessions.end_session(c, token))
    with engine.connect() as conn:
        assert sessions.session_operator(conn, token, T0 + SECOND) is None


def test_a_disabled_operator_is_refused_like_a_wrong_password(engine: Engine) -> None:
    operator_access.set_disabled(engine, "001", True, T0)
    disabled = refusal(lambda: sign_in(engine, "001", PASSWORD, T0))
    assert (disabled.code, disabled.status, disabled.message) == (
        "OPS-SIGNIN",
        401,
        "wrong operator code or password",
    )
    operator_access.set_disabled(engine, "001", False, T0)


def test_a_new_password_ends_sessions_and_sign_in_purges_expired_ones(engine: Engine) -> None:
    _, token = sign_in(engine, "001", PASSWORD, T0)
    _, old = sign_in(engine, "002", PASSWORD, T0)
    assert operator_access.set_password(engine, "001", "a-new-password", T0 + SECOND) == 1
    later = session_expires_us(T0)
    sign_in(engine, "001", "a-new-password", later)  # 002's session expired meanwhile
    with engine.connect() as conn:
        assert sessions.session_operator(conn, token, T0 + SECOND) is None
        assert not operators.load_operator(conn, "002").disabled
        hashes = conn.execute(select(s.console_session.c.token_hash)).scalars().all()
    assert token_hash(old) not in hashes, "the expired session is purged"
    operator_access.set_password(engine, "001", PASSWORD, later)


def test_passwords_are_stored_as_argon2_hashes(engine: Engine) -> None:
    with engine.connect() as conn:
        stored = conn.execute(select(s.operator.c.password_hash)).scalars().all()
    assert all(h.startswith("$argon2") and PASSWORD not in h for h in stored)


# XMAINPRO ----------------------------------------------------------------------------------


def test_xmainpro_alarm_and_operator_records(engine: Engine) -> None:
    provisioning.add_account(engine, Account("700013", "Other Site"))
    (first,) = raise_alarms(engine, "E110")
    (second,) = raise_alarms(engine, "E130", panel="13")  # another site: its own operator
    signed_on(engine, "001", "002")
    act(engine, lambda c: handling.set_receiving(c, "002", False, T0))
    pending_us = alarm(engine, first)["pending_us"]
    act(engine, lambda c: handling.take(c, "001", first, pending_us + 30 * SECOND))
    act(engine, lambda c: handling.log_call(c, "001", first, "x", pending_us + 90 * SECOND))
    act(engine, lambda c: handling.take(c, "002", second, pending_us + 40 * SECOND))
    act(engine, lambda c: handling.hold(c, "002", second, 1, "why", pending_us + 50 * SECOND))
    act(engine, lambda c: handling.end_holds(c, pending_us + 2 * MINUTE))
    act(engine, lambda c: handling.take(c, "002", second, pending_us + 3 * MINUTE))
    act(engine, lambda c: handling.set_receiving(c, "001", True, pending_us + 3 * MINUTE))
    now = pending_us + 4 * MINUTE
    with engine.connect() as conn:
        answer = xmainpro(conn, {}, None, now)  # type: ignore[arg-type]
    records = answer["XMAINPRO"]
    assert answer["TOTAL_RECORDS"] == "2"
    assert records[0] == {
        "COLOR": records[0]["COLOR"],
        "ACCOUNT_NUMBER": fields.account(ACCOUNT),  # padded to 9, as XMAPEND pads it
        "COMPANY_NAME": "Acme Widgets",
        "STREET_NAME2": "1 Main St",
        "CITY": "Springfield",
        "STATE": "",
        "TYPE": records[0]["TYPE"],
        "OPR": "001",
        "PEND_TIME": "00:04:00",
        "OPR_RECEIVED": "00:00:30",
        "OPR_FIRST_CALL": "00:01:00",
        "OPR_HANDLING": "00:03:30",
    }
    assert records[1]["OPR"] == "002" and records[1]["BEEN_ON_HOLD"] == "X"
    assert "OPR_FIRST_CALL" not in records[1]
    assert records[2:] == [
        {"COLOR": "70", "COMPANY_NAME": "Receiving Signals", "OPR": "001"},
        {"COLOR": "7C", "COMPANY_NAME": "Not Receiving", "OPR": "002"},
    ]


def test_every_action_bumps_the_queue_revision(engine: Engine) -> None:
    (alarm_id,) = raise_alarms(engine, "E130")
    signed_on(engine, "001")

    def revision() -> int:
        with engine.connect() as conn:
            return queries.queue_revision(conn)

    before = revision()
    act(engine, lambda c: handling.take(c, "001", alarm_id, T0))
    after_take = revision()
    act(engine, lambda c: handling.log_call(c, "001", alarm_id, "x", T0))
    assert before < after_take < revision()


def test_a_restoral_reaches_an_alarm_in_process(engine: Engine) -> None:
    (alarm_id,) = raise_alarms(engine, "E130", zone=7)
    signed_on(engine, "001")
    act(engine, lambda c: handling.take(c, "001", alarm_id, T0))
    raise_alarms(engine, "R130", at_us=T0 + SECOND, zone=7)
    assert alarm(engine, alarm_id)["restore_us"] == T0 + SECOND
    with engine.connect() as conn:
        detail = queries.alarm_detail(conn, alarm_id)
    paths = [e["pr_checksum"] for e in detail["events"]]
    assert paths == ["PENDING", "OPERATOR", "RESTORE"]
    assert detail["account"]["company_name"] == "Acme Widgets"


def test_refused_actions_change_nothing(engine: Engine) -> None:
    (alarm_id,) = raise_alarms(engine, "E130")
    signed_on(engine, "001")
    with engine.connect() as conn:
        before = (dict(queries.alarm(conn, alarm_id) or {}), queries.queue_revision(conn))
    for work in (
        lambda c: handling.resolve(c, "001", alarm_id, "FA", "", T0),
        lambda c: handling.hold(c, "001", alarm_id, 0, "x", T0),
        lambda c: handling.take_over(c, "001", alarm_id, T0),
    ):
        refusal(lambda work=work: act(engine, work))
    with engine.connect() as conn:
        after = (dict(queries.alarm(conn, alarm_id) or {}), queries.queue_revision(conn))
    assert after == before
    assert len(operator_records(engine)) == 1  # the sign-on only


def test_held_alarms_are_returned_by_supervision(engine: Engine) -> None:
    (alarm_id,) = raise_alarms(engine, "E130")
    signed_on(engine, "001")
    act(engine, lambda c: handling.take(c, "001", alarm_id, T0))
    act(engine, lambda c: handling.hold(c, "001", alarm_id, 1, "x", T0))
    with write_transaction(engine) as conn:
        conn.execute(update(s.alarm).values(hold_until_us=T0))
    with write_transaction(engine) as conn:
        Supervision(engine, 3600).supervise(conn, T0 + SECOND)
    assert alarm(engine, alarm_id)["state"] == AlarmState.PENDING


def test_signals_per_minute_counts_only_the_last_hour(engine: Engine) -> None:
    now = T0 + 3 * 3600 * SECOND
    raise_alarms(engine, "E130", at_us=now - 2 * 3600 * SECOND)  # too old
    raise_alarms(engine, "E130", "E131", at_us=now - 59 * MINUTE - SECOND, zone=10)
    raise_alarms(engine, "E130", at_us=now - 30 * SECOND, zone=20)
    with engine.connect() as conn:
        counts = statistics.signals_per_minute(conn, now)
        assert statistics.signals_per_minute(conn, now + 3 * 3600 * SECOND) == [0] * 60
    assert len(counts) == 60
    assert counts[0] == 2 and counts[59] == 1 and sum(counts) == 3
