"""One operator per site through the console API (decisions section 8), on both databases: a
new alarm of an account being worked goes to its operator, the alarm screen lists the account's
other open alarms (siblings), siblings resolve together all or none, and a supervisor moves an
account's alarms to another operator, with every refusal's code.

The node runs in the test's process; its operators sign in before any alarm exists and stop
receiving, so every alarm is taken, or handed by the rule under test. Each test has accounts
of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from alarmhub.core.operations import Action
from alarmhub.store import queries
from alarmhub.xm.methods import xmainpro
from tests.support.console_station import DNIS, provision_console, refused
from tests.support.node_hub import NodeHub, running

pytestmark = pytest.mark.backends("sqlite", "postgresql")

SIGNED_IN = ("OP1", "OP2", "OP3", "SUP")  # OP4 never signs in; DIS is disabled
Row = dict[str, Any]


class Hub(NodeHub):
    def where(self, alarm_id: int) -> tuple[str, str | None]:
        row = self.alarm(alarm_id)
        return row["state"], row["opr"]

    def records(self, alarm_id: int, action: Action) -> list[Row]:
        with self.engine.connect() as conn:
            events = queries.history_of_incident(conn, alarm_id)
        return [e for e in events if e["type"] == action.value]

    def take(self, code: str, alarm_id: int) -> None:
        self.consoles[code].ok(f"/alarms/{alarm_id}/take")


@pytest.fixture(scope="module")
def hub(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    data_dir: Path = tmp_path_factory.mktemp("sites")
    token, engine = provision_console(data_dir)
    with running(Hub, data_dir, token, engine, DNIS) as hub:
        yield hub.sign_in_all(SIGNED_IN)


# a new alarm goes to the site's operator -------------------------------------------------------


def test_a_new_alarm_of_a_worked_site_joins_its_operator_s_work(hub: Hub) -> None:
    first = hub.post("700001")
    hub.take("OP1", first)
    second = hub.post("700001", "E110", "2")
    assert hub.where(second) == ("in_process", "OP1")
    (handed,) = hub.records(second, Action.HANDED)
    assert handed["hist_text"] == "OPR OP1 HANDED ALARM"
    with hub.engine.connect() as conn:
        answer = xmainpro(conn, {}, None, hub.alarm(second)["taken_us"])  # type: ignore[arg-type]
    mine = [r for r in answer["XMAINPRO"] if r.get("ACCOUNT_NUMBER", "").strip() == "700001"]
    assert sorted(r["OPR"] for r in mine) == ["OP1", "OP1"]
    other = hub.post("700002")  # another site: nobody works it, it pends
    assert hub.where(other) == ("pending", None)


def test_the_alarm_screen_lists_the_account_s_other_open_alarms(hub: Hub) -> None:
    first, pending = hub.post("700003", zone="1"), hub.post("700003", zone="2")
    hub.take("OP1", first)
    handed = hub.post("700003", "E110", "3")
    hub.post("700004")  # another account's alarm is no sibling
    detail = hub.consoles["OP2"].get(f"/alarms/{first}").json()
    siblings = detail["siblings"]
    assert [(x["alarm_id"], x["state"], x["opr"]) for x in siblings] == [
        (pending, "pending", None),
        (handed, "in_process", "OP1"),
    ]
    assert set(siblings[0]) == {
        "alarm_id", "type", "hist_text", "state", "opr", "received_us", "priority", "color",
    }  # fmt: skip
    assert siblings[0]["hist_text"] == "BURGLARY ZONE 002"
    assert [
        x["alarm_id"] for x in hub.consoles["OP1"].get(f"/alarms/{handed}").json()["siblings"]
    ] == [
        first,
        pending,
    ]


# resolving siblings together ------------------------------------------------------------------


def test_siblings_resolve_together_each_with_its_own_record(hub: Hub) -> None:
    first, pending = hub.post("700005", zone="1"), hub.post("700005", zone="2")
    hub.take("OP1", first)
    handed = hub.post("700005", "E301", "3")  # AC power: no required step
    data = hub.consoles["OP1"].ok(
        f"/alarms/{first}/resolve",
        {"resolution": "FA", "note": "one incident", "siblings": [handed, pending]},
    )
    assert data["resolved"] == [first, handed, pending]
    for alarm_id in (first, handed, pending):
        row = hub.alarm(alarm_id)
        assert (row["state"], row["resolution"]) == ("resolved", "FA")
        (record,) = hub.records(alarm_id, Action.RESOLVE)
        assert record["opr"] == "OP1" and "one incident" in record["note"]
    (took,) = hub.records(pending, Action.TAKE)  # the pending sibling was taken first
    assert took["opr"] == "OP1"


def test_resolving_siblings_is_all_or_none(hub: Hub) -> None:
    first, second, third = (hub.post("700006", zone=z) for z in ("1", "2", "3"))
    hub.take("OP1", first)
    hub.take("OP2", second)  # taken from pending by another operator
    op1 = hub.consoles["OP1"]
    message = refused(
        op1.post(f"/alarms/{first}/resolve", {"resolution": "FA", "siblings": [third, second]}),
        409,
        "OPS-NOTYOURS",
    )
    assert f"alarm {second}" in message
    assert hub.where(first) == ("in_process", "OP1")
    assert hub.where(second) == ("in_process", "OP2")
    assert hub.where(third) == ("pending", None)  # its take was rolled back too
    assert hub.records(third, Action.TAKE) == []
    assert hub.records(first, Action.RESOLVE) == []


def test_each_sibling_is_checked_as_its_own_resolution(hub: Hub) -> None:
    first = hub.post("700012")
    hub.take("OP1", first)
    fire = hub.post("700012", "E110", "2")  # the plan's fire dispatch is required
    assert hub.where(fire) == ("in_process", "OP1")
    answer = hub.consoles["OP1"].post(
        f"/alarms/{first}/resolve", {"resolution": "FA", "siblings": [fire]}
    )
    assert f"sibling alarm {fire}" in refused(answer, 409, "OPS-STEPS")
    assert hub.where(first) == ("in_process", "OP1")  # all or none


def test_resolve_refuses_what_is_no_sibling(hub: Hub) -> None:
    first = hub.post("700007")
    elsewhere = hub.post("700008")
    hub.take("OP1", first)
    op1 = hub.consoles["OP1"]
    path = f"/alarms/{first}/resolve"
    refused(op1.post(path, {"resolution": "FA", "siblings": [elsewhere]}), 409, "OPS-SIBLING")
    refused(op1.post(path, {"resolution": "FA", "siblings": [first]}), 409, "OPS-SIBLING")
    refused(op1.post(path, {"resolution": "FA", "siblings": [10**12]}), 404, "OPS-NOTFOUND")
    refused(op1.post(path, {"resolution": "FA", "siblings": ["x"]}), 422, "CONSOLE-INPUT")
    refused(op1.post(path, {"resolution": "FA", "siblings": 3}), 422, "CONSOLE-INPUT")
    refused(op1.post(path, {"resolution": "FA", "siblings": [0]}), 422, "CONSOLE-INPUT")
    assert hub.where(first) == ("in_process", "OP1")
    assert hub.where(elsewhere) == ("pending", None)
    op1.ok(path, {"resolution": "FA", "siblings": []})  # none: the alarm alone
    assert hub.where(first)[0] == "resolved"


# moving an account's alarms ------------------------------------------------------------------


def test_a_supervisor_moves_a_site_s_alarms_to_another_operator(hub: Hub) -> None:
    first = hub.post("700009", zone="1")
    hub.take("OP1", first)
    held = hub.post("700009", "E110", "2")
    hub.consoles["OP1"].ok(f"/alarms/{held}/hold", {"minutes": 30, "reason": "keyholder"})
    data = hub.consoles["SUP"].ok("/accounts/700009/move", {"to": "OP3"})
    assert data["moved"] == [first, held]
    assert hub.where(first) == ("in_process", "OP3")
    assert hub.where(held) == ("on_hold", "OP3")
    (moved,) = hub.records(first, Action.MOVE)
    assert (moved["opr"], moved["hist_text"]) == ("SUP", "OPR SUP MOVED ALARM: FROM OP1 TO OP3")
    (moved_held,) = hub.records(held, Action.MOVE)
    assert moved_held["hist_text"] == "OPR SUP MOVED ALARM: FROM OP1 TO OP3 ON HOLD"
    later = hub.post("700009", "E120", "3")
    assert hub.where(later) == ("in_process", "OP3")  # the site's operator now


def test_moving_is_refused_with_its_codes(hub: Hub) -> None:
    first = hub.post("700010")
    hub.take("OP1", first)
    sup = hub.consoles["SUP"]
    path = "/accounts/700010/move"
    refused(hub.consoles["OP2"].post(path, {"to": "OP2"}), 403, "OPS-ROLE")
    assert "not signed on" in refused(sup.post(path, {"to": "OP4"}), 409, "OPS-TARGET")
    assert "disabled" in refused(sup.post(path, {"to": "DIS"}), 409, "OPS-TARGET")
    refused(sup.post(path, {"to": "ZZZ"}), 404, "OPS-OPERATOR")
    refused(sup.post(path, {"to": "OP1"}), 409, "OPS-STATE")  # already all theirs
    refused(sup.post("/accounts/700011/move", {"to": "OP2"}), 409, "OPS-STATE")  # nothing open
    refused(sup.post(path, {}), 422, "CONSOLE-INPUT")
    refused(sup.post(path, {"to": "OP2", "from": "OP1"}), 422, "CONSOLE-INPUT")
    refused(sup.post("/accounts/7000%2010/move", {"to": "OP2"}), 422, "CONSOLE-INPUT")
    refused(sup.post(path, {"to": "OP2"}, csrf="wrong"), 403, "CONSOLE-CSRF")
    assert hub.where(first) == ("in_process", "OP1")
