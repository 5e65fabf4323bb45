"""Storm mode in the store (``store.storm``, routing's cache of the TYPEs in storm mode), on
SQLite and PostgreSQL: a storm TYPE's alarm goes to history and the storm list, another TYPE of
the same account pends and is handed out, switching off offers the storm list, its batch
resolution resolves in one transaction with a RESOLVE record each; every switch is audited.

Alarms are made the way the node makes them: signals committed, then routed (one routing
instance per test, as a node keeps one: its cache must see each switch).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine

from alarmhub.clock import now_us
from alarmhub.core.alarm_types import FAIL_TO_TEST
from alarmhub.core.errors import ActionRefused
from alarmhub.core.operations import Action, AlarmState
from alarmhub.core.router import RoutePath
from alarmhub.store import handling, provisioning, queries, storm
from alarmhub.store import schema as s
from alarmhub.store.engine import write_transaction
from alarmhub.store.routing import SignalRouting
from alarmhub.store.supervision import Supervision
from tests.support.store_station import SECOND, T0, alarm, route, station
from tests.support.store_station import act as act_on

ACCOUNT = "700012"
OTHER = "700013"
H = s.history.c


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    with station(tmp_path, {ACCOUNT: "Acme Widgets", OTHER: "Beta Books"}) as engine:
        yield engine


class Station:
    """Signals committed and routed by one routing instance, as one node does."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.routing = SignalRouting(engine, 1000, 2)
        self.zone = 0

    def signals(self, *codes: str, panel: str = "12", at_us: int = T0) -> list[int]:
        """One signal per code (each of its own zone, or zone 000 for AC power); their
        incident numbers (the alarm ids of those that raise one)."""
        batch = []
        for code in codes:
            self.zone += 1
            zone = "000" if code[1:] == "301" else f"{self.zone:03d}"
            batch.append((f"70{panel}", code, zone))
        return route(self.engine, batch, at_us, self.routing)


def act(engine: Engine, work: Any) -> Any:
    return act_on(engine, work, queues=True)


def records(engine: Engine, *types: Action) -> list[dict[str, Any]]:
    query = select(s.history).where(
        H.pr_checksum == RoutePath.OPERATOR.value, H.type.in_([t.value for t in types])
    )
    with engine.connect() as conn:
        return [dict(r) for r in conn.execute(query.order_by(H.event_id)).mappings()]


def switch(engine: Engine, on: bool, *types: str, by: str = "SUP", at_us: int = T0) -> Any:
    return act(engine, lambda c: storm.switch(c, by, types, on, at_us))


def refusal(work: Any) -> ActionRefused:
    with pytest.raises(ActionRefused) as caught:
        work()
    return caught.value


def test_a_storm_type_goes_to_the_storm_list_and_another_type_of_the_account_pends(
    engine: Engine,
) -> None:
    station = Station(engine)
    station.signals("E602")  # routing loads its cache before the switch (a test report)
    answer = switch(engine, True, "acpwr", "COMM")
    assert answer["changed"] == ["ACPWR", "COMM"]
    assert [(t["type"], t["since_us"], t["by"]) for t in answer["types"]] == [
        ("ACPWR", T0, "SUP"),
        ("COMM", T0, "SUP"),
    ]
    act(engine, lambda c: handling.sign_on(c, "001", T0, receiving=True))
    power, burglary = station.signals("E301", "E130", at_us=T0 + SECOND)

    stormed = alarm(engine, power)
    assert (stormed["state"], stormed["type"], stormed["opr"]) == ("storm", "ACPWR", None)
    assert stormed["path"] == RoutePath.STORM.value
    assert alarm(engine, burglary)["state"] == AlarmState.IN_PROCESS  # handed to 001
    assert alarm(engine, burglary)["opr"] == "001"
    with engine.connect() as conn:
        assert power not in [a["alarm_id"] for a in queries.pending_alarms(conn)]
        (event,) = queries.history_of_incident(conn, power)
        assert (event["pr_checksum"], event["alarm_id"], event["type"]) == ("STORM", power, "ACPWR")
        assert event["alarm_category"] == "O"
        listed = storm.storm_list(conn)
        assert [a["alarm_id"] for a in listed["alarms"]] == [power]
        assert listed["alarms"][0]["company_name"] == "Acme Widgets"
        assert storm.status(conn)["storm_list"] == 1
        assert storm.status(conn)["types"][0]["alarms"] == 1
    refused = refusal(lambda: act(engine, lambda c: handling.take(c, "001", power, T0)))
    assert refused.code in ("OPS-STATE", "OPS-SIGNON")


def test_a_restoral_marks_the_alarm_on_the_storm_list(engine: Engine) -> None:
    station = Station(engine)
    switch(engine, True, "ACPWR")
    (power,) = station.signals("E301")
    station.signals("R301", at_us=T0 + 60 * SECOND)
    assert alarm(engine, power)["restore_us"] == T0 + 60 * SECOND
    assert alarm(engine, power)["state"] == "storm"


def test_switching_is_audited_once_and_refused_to_operators_and_unknown_types(
    engine: Engine,
) -> None:
    switch(engine, True, "ACPWR")
    again = switch(engine, True, "ACPWR", at_us=T0 + SECOND)
    assert again["changed"] == []
    assert again["types"][0]["since_us"] == T0  # unchanged
    (on,) = records(engine, Action.STORM_ON)
    assert (on["opr"], on["hist_text"], on["account_number"]) == (
        "SUP",
        "OPR SUP STORM MODE ON: ACPWR",
        "",
    )
    assert on["received_us"] == T0
    refused = refusal(lambda: switch(engine, False, "ACPWR", by="001"))
    assert (refused.code, refused.status) == ("OPS-ROLE", 403)
    refused = refusal(lambda: switch(engine, True, "NOSUC"))
    assert (refused.code, refused.status) == ("OPS-STORM", 422)
    refused = refusal(lambda: switch(engine, True, "DURES"))
    assert "always pends" in refused.message
    with engine.connect() as conn:
        assert storm.storm_types(conn) == frozenset({"ACPWR"})


def test_switching_off_offers_the_storm_list_and_new_alarms_pend_again(engine: Engine) -> None:
    station = Station(engine)
    switch(engine, True, "ACPWR", "TRBL")
    first, second = station.signals("E301", "E301", panel="12")
    (third,) = station.signals("E301", panel="13")
    (trouble,) = station.signals("E300")  # system trouble: TRBL, still in storm mode
    answer = switch(engine, False, "ACPWR", at_us=T0 + 10 * SECOND)
    assert answer["changed"] == ["ACPWR"]
    assert [t["type"] for t in answer["types"]] == ["TRBL"]
    assert sorted(a["alarm_id"] for a in answer["list"]["alarms"]) == [first, second, third]
    assert answer["list"]["total"] == 3
    (off,) = records(engine, Action.STORM_OFF)
    assert off["hist_text"] == "OPR SUP STORM MODE OFF: ACPWR, 3 ON THE STORM LIST"
    (later,) = station.signals("E301", panel="13", at_us=T0 + 20 * SECOND)
    assert alarm(engine, later)["state"] == AlarmState.PENDING
    assert alarm(engine, trouble)["state"] == "storm"


def test_a_storm_alarm_sent_to_pending_is_handed_out_and_audited(engine: Engine) -> None:
    station = Station(engine)
    switch(engine, True, "ACPWR")
    first, second = station.signals("E301", "E301", panel="12")
    (burglary,) = station.signals("E130")  # not a storm TYPE: pends
    refused = refusal(lambda: act(engine, lambda c: storm.pend(c, "SUP", [first, burglary], T0)))
    assert (refused.code, str(burglary) in refused.message) == ("OPS-STATE", True)
    assert alarm(engine, first)["state"] == "storm"  # nothing changed
    refused = refusal(lambda: act(engine, lambda c: storm.pend(c, "001", [first], T0)))
    assert refused.code == "OPS-ROLE"

    at = T0 + 30 * SECOND
    assert act(engine, lambda c: storm.pend(c, "SUP", [first], at)) == 1
    sent = alarm(engine, first)
    assert (sent["state"], sent["pending_us"]) == (AlarmState.PENDING, T0)  # its age kept
    assert alarm(engine, second)["state"] == "storm"
    (record,) = records(engine, Action.STORM_PEND)
    assert (record["alarm_id"], record["opr"], record["received_us"]) == (first, "SUP", at)
    assert record["hist_text"] == "OPR SUP SENT STORM ALARM TO PENDING"
    with engine.connect() as conn:
        assert [a["alarm_id"] for a in storm.storm_list(conn)["alarms"]] == [second]
    for code in ("001", "002"):  # the burglary goes first, then the alarm sent to pending
        act(engine, lambda c, code=code: handling.sign_on(c, code, at, receiving=True))
    with write_transaction(engine) as conn:
        Supervision(engine, 3600).supervise(conn, at + SECOND)
    handed = {alarm(engine, i)["opr"] for i in (first, burglary)}
    assert handed == {"001", "002"}
    assert alarm(engine, first)["state"] == "in_process"
    assert alarm(engine, second)["state"] == "storm"


def test_batch_resolution_resolves_in_one_go_with_a_record_each(engine: Engine) -> None:
    station = Station(engine)
    switch(engine, True, "ACPWR", "TRBL")
    power = station.signals("E301", "E301", "E301")
    (trouble,) = station.signals("E300")
    switch(engine, False, "ACPWR", "TRBL", at_us=T0 + SECOND)
    at = T0 + 90 * SECOND
    resolved = act(
        engine,
        lambda c: storm.resolve(c, "SUP", power[:2], "rstr", "storm over", at),
    )
    assert resolved == 2
    for alarm_id in power[:2]:
        row = alarm(engine, alarm_id)
        assert (row["state"], row["resolution"], row["opr"], row["resolved_us"]) == (
            "resolved",
            "RSTR",
            "SUP",
            at,
        )
        (record,) = [r for r in records(engine, Action.RESOLVE) if r["alarm_id"] == alarm_id]
        assert record["hist_text"] == "OPR SUP RESOLVED: RSTR RESTORED - NO ACTION NEEDED"
        assert record["note"].endswith("PEND_TIME 00:01:30; storm over")
        assert record["account_number"] == ACCOUNT
    (batch,) = records(engine, Action.STORM_RESOLVE)
    assert batch["hist_text"] == "OPR SUP RESOLVED STORM LIST: 2 ALARMS RSTR ACPWR"

    # one alarm not on the list refuses the whole batch, which changes nothing
    refused = refusal(
        lambda: act(engine, lambda c: storm.resolve(c, "SUP", [power[2], power[0]], "RSTR", "", at))
    )
    assert refused.code == "OPS-STATE"
    assert str(power[0]) in refused.message
    assert alarm(engine, power[2])["state"] == "storm"
    refused = refusal(lambda: act(engine, lambda c: storm.resolve(c, "SUP", None, "NOPE", "", at)))
    assert refused.code == "OPS-RESOLUTION"
    refused = refusal(lambda: act(engine, lambda c: storm.resolve(c, "SUP", None, "DISP", "", at)))
    assert (refused.code, refused.status) == ("OPS-DISPATCH", 409)  # none was dispatched
    refused = refusal(lambda: act(engine, lambda c: storm.resolve(c, "001", None, "RSTR", "", at)))
    assert refused.code == "OPS-ROLE"

    # all of one TYPE, then all
    assert act(engine, lambda c: storm.resolve(c, "SUP", None, "RSTR", "", at, ["TRBL"])) == 1
    assert alarm(engine, trouble)["state"] == "resolved"
    assert act(engine, lambda c: storm.resolve(c, "SUP", None, "FAE", "", at)) == 1
    assert act(engine, lambda c: storm.resolve(c, "SUP", None, "FAE", "", at)) == 0
    with engine.connect() as conn:
        assert storm.status(conn)["storm_list"] == 0


def test_a_system_alarm_of_a_storm_type_goes_to_the_storm_list(engine: Engine) -> None:
    switch(engine, True, FAIL_TO_TEST.type)
    provisioning.set_test_interval(engine, ACCOUNT, 60)
    later = now_us() + 3600 * SECOND
    with write_transaction(engine) as conn:
        Supervision(engine, 0).supervise(conn, later)
    with engine.connect() as conn:
        (row,) = conn.execute(select(s.alarm).where(s.alarm.c.type == FAIL_TO_TEST.type)).mappings()
        events = queries.history_of_incident(conn, row["alarm_id"])
    assert row["state"] == "storm"
    assert [e["pr_checksum"] for e in events] == ["SYSTEM"]
