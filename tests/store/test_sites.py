"""One operator per site in the store (``store.handling.hand_out``, ``store.sites``), on both
databases: new alarms of an account being worked go to its operator, busy or not, whether
routing, supervision or the end of a hold brings them to pending; a DURESS alarm never goes to
the operator whose passcode check raised it; two accounts do not interfere; siblings resolve
together all or none; a supervisor moves an account's alarms.

Alarms are made the way the node makes them: signals committed, then routed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine

from alarmhub.core.errors import ActionRefused
from alarmhub.core.operations import Action, AlarmState
from alarmhub.core.response import PasscodeAnswer
from alarmhub.core.router import RoutePath
from alarmhub.store import handling, passcodes, provisioning
from alarmhub.store import schema as s
from alarmhub.store.engine import write_transaction
from alarmhub.store.supervision import Supervision
from tests.support.database import statements_run
from tests.support.store_station import MINUTE, SECOND, T0, act, alarm, station
from tests.support.store_station import route as route_signals

SCHOOL, SHOP = "700001", "700002"


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    with station(tmp_path, {SCHOOL: "Oak School", SHOP: "Elm Shop"}) as engine:
        yield engine


def route(engine: Engine, *signals: tuple[str, str, str], at_us: int = T0) -> list[int]:
    """Commit ``(account, code, zone)`` signals and route them in one batch; their alarm ids."""
    return route_signals(engine, signals, at_us)


def where(engine: Engine, alarm_id: int) -> tuple[str, str | None]:
    row = alarm(engine, alarm_id)
    return row["state"], row["opr"]


def records(engine: Engine, alarm_id: int, action: Action) -> list[dict[str, Any]]:
    h = s.history.c
    query = select(s.history).where(
        h.pr_checksum == RoutePath.OPERATOR.value, h.alarm_id == alarm_id, h.type == action.value
    )
    with engine.connect() as conn:
        return [dict(r) for r in conn.execute(query.order_by(h.event_id)).mappings()]


def refusal(work: Any) -> ActionRefused:
    with pytest.raises(ActionRefused) as caught:
        work()
    return caught.value


def sign_on(engine: Engine, *codes: str, receiving: bool = False) -> None:
    for code in codes:
        act(engine, lambda c, code=code: handling.sign_on(c, code, T0, receiving=receiving))


def working(engine: Engine, code: str, account: str, zone: str = "001") -> int:
    """Operator ``code`` signed on, not receiving, with an alarm of ``account`` in process."""
    (first,) = route(engine, (account, "E130", zone))
    sign_on(engine, code)
    act(engine, lambda c: handling.take(c, code, first, T0 + SECOND))
    return first


IN_PROCESS, PENDING = AlarmState.IN_PROCESS.value, AlarmState.PENDING.value


# new alarms go to the site's operator --------------------------------------------------------


def test_a_new_alarm_of_a_worked_account_goes_to_its_busy_operator(engine: Engine) -> None:
    working(engine, "001", SCHOOL)
    sign_on(engine, "002", receiving=True)  # idle and receiving: the normal hand-out's choice
    (second,) = route(engine, (SCHOOL, "E110", "002"), at_us=T0 + 2 * SECOND)
    assert where(engine, second) == (IN_PROCESS, "001")
    (handed,) = records(engine, second, Action.HANDED)
    assert (handed["opr"], handed["hist_text"]) == ("001", "OPR 001 HANDED ALARM")
    assert alarm(engine, second)["taken_us"] == T0 + 2 * SECOND


def test_two_accounts_do_not_interfere(engine: Engine) -> None:
    working(engine, "001", SCHOOL)
    sign_on(engine, "002", receiving=True)
    school, shop, school_again = route(
        engine, (SCHOOL, "E130", "005"), (SHOP, "E130", "005"), (SCHOOL, "E120", "006")
    )
    assert where(engine, school) == (IN_PROCESS, "001")
    assert where(engine, school_again) == (IN_PROCESS, "001")
    assert where(engine, shop) == (IN_PROCESS, "002")  # the idle operator, as ever
    (shop_handed,) = records(engine, shop, Action.HANDED)
    assert shop_handed["opr"] == "002"


def test_nobody_working_the_account_leaves_the_alarm_pending(engine: Engine) -> None:
    working(engine, "001", SCHOOL)
    (shop,) = route(engine, (SHOP, "E130", "001"))
    assert where(engine, shop) == (PENDING, None)


def test_an_operator_who_signed_off_gets_nothing(engine: Engine) -> None:
    first = working(engine, "001", SCHOOL)
    act(engine, lambda c: handling.hold(c, "001", first, 5, "call back", T0 + 2 * SECOND))
    act(engine, lambda c: handling.sign_off(c, "001", T0 + 3 * SECOND))
    (second,) = route(engine, (SCHOOL, "E130", "002"), at_us=T0 + 4 * SECOND)
    assert where(engine, second) == (PENDING, None)  # a held alarm is not one in process


def test_a_batch_asks_once_for_the_operators_of_its_accounts(engine: Engine) -> None:
    working(engine, "001", SCHOOL)
    with statements_run(
        engine, lambda sql: "JOIN operator" in sql and "alarm.account_number IN" in sql
    ) as statements:
        handed = route(engine, *((SCHOOL, "E130", f"{z:03d}") for z in range(2, 12)))
    assert len(statements) == 1
    assert {where(engine, a) for a in handed} == {(IN_PROCESS, "001")}


def test_a_duress_alarm_never_goes_to_the_operator_of_the_check(engine: Engine) -> None:
    first = working(engine, "001", SCHOOL)
    answer = PasscodeAnswer(verified=True, duress=True)
    duress = act(engine, lambda c: passcodes.apply(c, "001", first, answer, T0 + 2 * SECOND))
    assert alarm(engine, duress)["type"] == "DURES"
    assert where(engine, duress) == (PENDING, None)


def test_a_duress_alarm_may_go_to_another_operator_working_the_account(engine: Engine) -> None:
    first, second = route(engine, (SCHOOL, "E130", "001"), (SCHOOL, "E130", "002"))
    sign_on(engine, "001", "002")
    act(engine, lambda c: handling.take(c, "001", first, T0 + SECOND))
    act(engine, lambda c: handling.take(c, "002", second, T0 + 2 * SECOND))
    answer = PasscodeAnswer(verified=True, duress=True)
    duress = act(engine, lambda c: passcodes.apply(c, "001", first, answer, T0 + 3 * SECOND))
    assert where(engine, duress) == (IN_PROCESS, "002")
    (next_one,) = route(engine, (SCHOOL, "E110", "003"), at_us=T0 + 4 * SECOND)
    assert where(engine, next_one) == (IN_PROCESS, "001")  # who took the account's alarm first


def test_a_hold_that_ends_returns_the_alarm_to_the_site_s_operator(engine: Engine) -> None:
    first = working(engine, "001", SCHOOL)
    (second,) = route(engine, (SCHOOL, "E110", "002"), at_us=T0 + 2 * SECOND)
    assert where(engine, second) == (IN_PROCESS, "001")
    act(engine, lambda c: handling.hold(c, "001", second, 1, "wait", T0 + 3 * SECOND))
    sign_on(engine, "002", receiving=True)
    act(engine, lambda c: handling.end_holds(c, T0 + 2 * MINUTE))
    assert where(engine, second) == (IN_PROCESS, "001")
    assert alarm(engine, second)["been_on_hold"]
    assert where(engine, first) == (IN_PROCESS, "001")


def test_supervision_s_alarms_go_to_the_site_s_operator(engine: Engine) -> None:
    provisioning.set_test_interval(engine, SCHOOL, 3600)
    working(engine, "001", SCHOOL)
    sign_on(engine, "002", receiving=True)
    later = T0 + 3 * 3600 * SECOND
    with write_transaction(engine) as conn:
        Supervision(engine, 60).supervise(conn, later)
    with engine.connect() as conn:
        (fail,) = conn.execute(select(s.alarm.c.alarm_id).where(s.alarm.c.type == "FTT")).scalars()
    assert where(engine, fail) == (IN_PROCESS, "001")
