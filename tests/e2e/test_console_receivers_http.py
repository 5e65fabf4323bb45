"""The console's Receivers panel through its JSON API, on both databases: ``GET
/console/api/receivers`` answers a signed-in operator the success envelope with every receiver
link (its settings as provisioned; the states and their order: tests/store/
test_console_receivers.py) and how many are failed, and a request without a session 401
CONSOLE-SESSION.

The node runs in the test's process; the console signs in through the form.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from alarmhub.clock import now_us
from alarmhub.store import operators, receivers
from alarmhub.store.engine import open_engine, write_transaction
from alarmhub.store.receivers import LinkSettings
from tests.support.console_client import PASSWORD, SUCCESS, Console
from tests.support.console_station import refused
from tests.support.database import database_url
from tests.support.node_hub import NodeHub, running

pytestmark = pytest.mark.backends("sqlite", "postgresql")

LINK = LinkSettings("MX-B", "ademco685", "serial", "/dev/alarmhub-no-such-port", 9600, "8N1")


@pytest.fixture(scope="module")
def hub(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeHub]:
    data_dir: Path = tmp_path_factory.mktemp("receivers")
    engine = open_engine(database_url(data_dir))
    operators.add_operator(engine, "OP1", "Olive Operator", "operator", PASSWORD)
    with running(NodeHub, data_dir, "", engine, "") as hub:
        yield hub


def test_an_operator_reads_the_links(hub: NodeHub) -> None:
    console = hub.console("OP1")
    empty = console.get("/receivers")
    assert empty.status_code == 200, empty.text
    assert {k: empty.json()[k] for k in SUCCESS} == SUCCESS
    assert (empty.json()["links"], empty.json()["failed"]) == ([], 0)

    with write_transaction(hub.engine) as conn:
        receivers.add_link(conn, LINK, now_us())
        receivers.add_line(conn, LINK.name, 1, 1, "C1", now_us())
    body = console.get("/receivers").json()
    [link] = body["links"]
    shown = ("name", "protocol", "transport", "address", "baud", "framing", "lines")
    assert [link[k] for k in shown] == [
        "MX-B", "ademco685", "serial", "/dev/alarmhub-no-such-port", 9600, "8N1", 1,
    ]  # fmt: skip
    assert body["server_us"] > 0


def test_the_panel_needs_a_session(hub: NodeHub) -> None:
    stranger = Console(hub.station.url, hub.station.client._transport)
    try:
        refused(stranger.get("/receivers"), 401, "CONSOLE-SESSION")
    finally:
        stranger.close()
