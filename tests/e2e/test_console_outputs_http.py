"""The console's automation outputs through its JSON API, on both databases: ``GET
/console/api/outputs`` answers a signed-in operator the success envelope with every output, its
state and counts as its sending node last reported them (``store.outputs.report``) and its
queue (frames queued, the oldest one's age, those stale), failed outputs first, with how many
are failed and the TYPE of their alarm; a request without a session 401 CONSOLE-SESSION.

The outputs' lanes are held by a node that is not the test's (``store.outputs.hold``), so the
node running in the test's process never sends them: what the view shows is what the test
reported. The console signs in through the form.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from alarmhub.clock import now_us
from alarmhub.core import units
from alarmhub.core.alarm_types import AUTOMATION_OUTPUT_FAILURE
from alarmhub.core.outputs import RETENTION_HOURS_DEFAULT, OutputReport, OutputSettings
from alarmhub.store import operators, outputs
from alarmhub.store.engine import open_engine, write_transaction
from tests.support.console_client import PASSWORD, SUCCESS, Console
from tests.support.console_station import refused
from tests.support.database import database_url
from tests.support.node_hub import NodeHub, running

pytestmark = pytest.mark.backends("sqlite", "postgresql")

HOUR_US = units.hours_us(1)


def settings(name: str, addresses: tuple[str, ...], accounts: tuple[str, ...]) -> OutputSettings:
    return OutputSettings(0, name, "surgard", "connect", addresses, None, None, accounts,
                          1, 1, 1, 4.0, 30)  # fmt: skip


@pytest.fixture(scope="module")
def hub(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeHub]:
    data_dir: Path = tmp_path_factory.mktemp("outputs")
    engine = open_engine(database_url(data_dir))
    operators.add_operator(engine, "OP1", "Olive Operator", "operator", PASSWORD)
    with running(NodeHub, data_dir, "", engine, "") as hub:
        yield hub


def test_an_operator_reads_the_outputs(hub: NodeHub) -> None:
    console = hub.console("OP1")
    empty = console.get("/outputs")
    assert empty.status_code == 200, empty.text
    assert {k: empty.json()[k] for k in SUCCESS} == SUCCESS
    assert (empty.json()["outputs"], empty.json()["failed"]) == ([], 0)

    now = now_us()
    with write_transaction(hub.engine) as conn:
        auto = outputs.add(conn, settings("auto", ("127.0.0.1:9", "127.0.0.1:10"), ()), now)
        fwd = outputs.add(conn, settings("fwd", ("127.0.0.1:11",), ("77",)), now)
        for output_id in (auto, fwd):  # another node's, for an hour: never sent from here
            assert outputs.hold(conn, output_id, "node-b", now + HOUR_US)
        stale_us = now - units.hours_us(RETENTION_HOURS_DEFAULT) - HOUR_US
        for at_us in (stale_us, now):  # account 1234: to auto only
            outputs.enqueue_event(conn, "1234", "1234", "E350", "00", "000", at_us)
        failing_report = OutputReport(
            "failed", "127.0.0.1:10", sent=7, resent=12, acks=7, naks=3, timeouts=9,
            last_sent_us=now, last_delivered_us=now - HOUR_US, failing_since_us=now - HOUR_US,
            node="node-b",
        )  # fmt: skip
        up_report = OutputReport(
            "up", "127.0.0.1:11", sent=5, resent=0, acks=5, naks=0, timeouts=0,
            last_sent_us=now, last_delivered_us=now, failing_since_us=None, node="node-b",
        )  # fmt: skip
        outputs.report(conn, auto, failing_report)
        outputs.report(conn, fwd, up_report)
    body = console.get("/outputs").json()
    assert (body["failed"], body["alarm_type"]) == (1, AUTOMATION_OUTPUT_FAILURE.type)
    assert [o["name"] for o in body["outputs"]] == ["auto", "fwd"]
    failed, up = body["outputs"]
    shown = ("state", "protocol", "transport", "address", "queued", "stale", "sent", "resent",
             "naks", "timeouts", "held_by", "accounts")  # fmt: skip
    assert [failed[k] for k in shown] == [
        "failed", "surgard", "connect", "127.0.0.1:10", 2, 1, 7, 12, 3, 9, "node-b", [],
    ]  # fmt: skip
    assert failed["oldest_queued_s"] >= (RETENTION_HOURS_DEFAULT + 1) * 3600
    assert failed["last_delivered_us"] == now - HOUR_US
    assert [up[k] for k in shown] == [
        "up", "surgard", "connect", "127.0.0.1:11", 0, 0, 5, 0, 0, 0, "node-b", ["77"],
    ]  # fmt: skip
    assert up["oldest_queued_s"] is None
    assert body["server_us"] >= now


def test_the_outputs_need_a_session(hub: NodeHub) -> None:
    stranger = Console(hub.station.url, hub.station.client._transport)
    try:
        refused(stranger.get("/outputs"), 401, "CONSOLE-SESSION")
    finally:
        stranger.close()
