"""Dispatches, acknowledged steps and the resolution checks in the store, on both databases
(decisions section 8): enhanced call verification before a burglary's dispatch, its exemption
for a fire, the DISP and STEP records, a dispatch resolution without its dispatch, the plan's
required steps, and a station plan for one zone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine

from alarmhub.core.account import Account
from alarmhub.core.errors import ActionRefused
from alarmhub.core.plans import Step, StepKind
from alarmhub.core.response import CallOutcome, Contact, Phone
from alarmhub.core.router import RoutePath
from alarmhub.core.signal import Signal, SignalFields
from alarmhub.store import contacts as contact_store
from alarmhub.store import dispatch, handling, operations, operators, plans, provisioning, queries
from alarmhub.store import response as data
from alarmhub.store import schema as s
from alarmhub.store.commit import SignalInsert, commit_signals
from alarmhub.store.engine import open_engine, write_transaction
from alarmhub.store.routing import SignalRouting
from tests.support.database import database_url

SECOND = 1_000_000
T0 = 1_800_000_000 * SECOND
DNIS, ACCOUNT, PREMISES = "D1", "700012", "(815) 555-0100"


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = open_engine(database_url(tmp_path, "plans"))
    provisioning.add_dnis(engine, DNIS, "70####")
    provisioning.add_account(engine, Account(ACCOUNT, "Acme Widgets"))
    data.set_account_response(engine, ACCOUNT, {}, phone=PREMISES)
    contact_store.add_contact(engine, Contact(ACCOUNT, "Ann", (Phone("555-0101"),)))
    operators.add_operator(engine, "001", "Ann", "operator", "correct horse")
    with write_transaction(engine) as conn:
        handling.sign_on(conn, "001", T0, receiving=False)
    yield engine
    engine.dispose()


def taken(engine: Engine, code: str, zone: str = "001") -> int:
    """Raise an alarm of ``code`` and have operator 001 take it (or be handed it, when they
    work the account already: one operator per site); its id."""
    signal = Signal("site", "rx", SignalFields(DNIS, "12", code, "01", zone), "t", T0)
    with write_transaction(engine) as conn:
        (stored,) = commit_signals(conn, SignalInsert(engine), [signal], 3600 * SECOND)
    with write_transaction(engine) as conn:
        SignalRouting(engine, 1000, 2).route(conn, T0)
        row = queries.alarm(conn, stored.incident_number)
    if row is None or row["opr"] != "001":
        act(engine, lambda c: handling.take(c, "001", stored.incident_number, T0))
    return stored.incident_number


def act(engine: Engine, work: Any) -> Any:
    return operations.run(engine, work)


def refused(engine: Engine, work: Any) -> ActionRefused:
    with pytest.raises(ActionRefused) as caught:
        act(engine, work)
    return caught.value


def call(engine: Engine, alarm_id: int, phone: str, outcome: CallOutcome, who: int | None = None):  # type: ignore[no-untyped-def]
    act(
        engine,
        lambda c: handling.log_call(c, "001", alarm_id, "", T0, handling.Call(outcome, phone, who)),
    )


def police(alarm_id: int, avs: int = 2, reference: str = "5521") -> Any:
    return lambda c: dispatch.dispatch(c, "001", alarm_id, "police", avs, reference, T0)


def records(engine: Engine, alarm_id: int, kind: str) -> list[str]:
    h = s.history.c
    with engine.connect() as conn:
        return list(
            conn.execute(
                select(h.hist_text).where(
                    h.alarm_id == alarm_id,
                    h.type == kind,
                    h.pr_checksum == RoutePath.OPERATOR.value,
                )
            ).scalars()
        )


def test_a_burglary_dispatch_waits_for_two_calls_to_two_numbers(engine: Engine) -> None:
    alarm_id = taken(engine, "E130")
    refusal = refused(engine, police(alarm_id))
    assert (refusal.code, refusal.status) == ("OPS-VERIFY", 409)
    assert "two calls to two different numbers" in refusal.message
    call(engine, alarm_id, PREMISES, CallOutcome.NO_ANSWER)
    call(engine, alarm_id, "815.555.0100", CallOutcome.BUSY)  # the same number again
    assert refused(engine, police(alarm_id)).code == "OPS-VERIFY"
    call(engine, alarm_id, "555-0101", CallOutcome.ANSWERED)
    record = act(engine, police(alarm_id))
    assert (record["agency"], record["avs"], record["reference"]) == ("police", 2, "5521")
    assert records(engine, alarm_id, "DISP") == ["OPR 001 DISPATCHED POLICE AVS 2 REF 5521"]


def test_a_fire_needs_no_verification_unless_the_station_says_so(engine: Engine) -> None:
    fire = taken(engine, "E110")
    act(engine, lambda c: dispatch.dispatch(c, "001", fire, "fire", 3, "", T0))
    assert records(engine, fire, "DISP") == ["OPR 001 DISPATCHED FIRE AVS 3"]
    plans.set_ecv(engine, "FIRE", True)
    other = taken(engine, "E110", zone="002")
    refusal = refused(engine, lambda c: dispatch.dispatch(c, "001", other, "fire", 3, "", T0))
    assert refusal.code == "OPS-VERIFY"


@pytest.mark.parametrize(
    ("agency", "avs", "reference", "code"),
    [
        ("navy", 2, "", "OPS-AGENCY"),
        ("police", 5, "", "OPS-AVS"),
        ("police", 1, "x" * 41, "OPS-REFERENCE"),
    ],
)
def test_a_dispatch_that_makes_no_sense_is_refused(
    engine: Engine, agency: str, avs: int, reference: str, code: str
) -> None:
    alarm_id = taken(engine, "E120")  # panic: no verification owed
    refusal = refused(
        engine, lambda c: dispatch.dispatch(c, "001", alarm_id, agency, avs, reference, T0)
    )
    assert (refusal.code, refusal.status) == (code, 422)


def test_a_resolution_waits_for_its_dispatch_then_for_the_required_steps(engine: Engine) -> None:
    alarm_id = taken(engine, "E130")
    resolve = lambda code: lambda c: handling.resolve(c, "001", alarm_id, code, "", T0)  # noqa: E731
    assert refused(engine, resolve("DISP")).code == "OPS-DISPATCH"
    steps = refused(engine, resolve("FA"))
    assert (steps.code, steps.status) == ("OPS-STEPS", 409)
    assert steps.message == "required steps of the plan are not done: 2. call the call list"
    (ann,) = [c["id"] for c in contact_store.list_contacts(engine, ACCOUNT)]
    call(engine, alarm_id, "555-0101", CallOutcome.ANSWERED, ann)
    act(engine, resolve("FA"))
    with engine.connect() as conn:
        assert queries.alarm(conn, alarm_id)["state"] == "resolved"  # type: ignore[index]


def test_a_zone_plan_s_instruction_is_done_by_its_acknowledgement(engine: Engine) -> None:
    gate = Step(StepKind.INSTRUCTION, required=True, text="Check the gate code in notes")
    plans.set_plan(engine, "BURG", [Step(StepKind.VIDEO), gate], ACCOUNT, "7")
    alarm_id = taken(engine, "E130", zone="007")
    with engine.connect() as conn:
        view = plans.plan_view(conn, queries.alarm(conn, alarm_id))  # type: ignore[arg-type]
    assert (view["scope"], view["next"]) == ("zone", 1)
    assert refused(
        engine, lambda c: handling.resolve(c, "001", alarm_id, "FA", "", T0)
    ).message == ("required steps of the plan are not done: 2. Check the gate code in notes")
    ack = lambda n, note: lambda c: dispatch.acknowledge_step(c, "001", alarm_id, n, note, T0)  # noqa: E731
    assert refused(engine, ack(3, "x")).code == "OPS-STEP"
    assert refused(engine, ack(2, "  ")).code == "OPS-NOTE"
    act(engine, ack(2, "code 4411 given to the guard"))
    assert refused(engine, ack(2, "again")).message == "step 2 is already done"
    assert records(engine, alarm_id, "STEP") == [
        "OPR 001 DID STEP 2 CHECK THE GATE CODE IN NOTES: code 4411 given to the guard"
    ]
    act(engine, lambda c: handling.resolve(c, "001", alarm_id, "FA", "", T0))


def test_a_step_done_by_doing_it_cannot_be_acknowledged(engine: Engine) -> None:
    alarm_id = taken(engine, "E130")
    refusal = refused(
        engine, lambda c: dispatch.acknowledge_step(c, "001", alarm_id, 2, "called", T0)
    )
    assert (refusal.code, refusal.status) == ("OPS-STEP", 409)
    assert "is done by doing it" in refusal.message
