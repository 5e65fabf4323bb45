"""An automation output's frames survive the death of the node that sends them (decisions
section 12): signals committed over HTTP while the stand-in automation NAKs wait in the
database; the node is SIGKILLed while the backlog drains, and after its restart every committed
signal's frame reaches the automation in commit order, the frame in flight at the kill at most
twice. With two nodes on PostgreSQL one sends the output; when it is killed during a stream of
frames the other takes the output over once the lease runs out, and nothing is lost.

Each signal has a panel of its own, so its frame tells which signal it is."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
import pytest

from alarmhub.core.outputs import LEASE_SECONDS, LINE_DEFAULT, RECEIVER_DEFAULT
from alarmhub.core.surgard import contact_id_frame
from tests.support.automation_sim import ACK, NAK, AutomationSim, SimThread
from tests.support.crashing import Servers, kill_node
from tests.support.processes import (
    Server,
    as_list,
    cli,
    cli_json,
    contact_id_request,
    provision,
    wait_for,
)

pytestmark = pytest.mark.long

SIGNALS = 400  # the backlog of the first test, the stream of the second
KILL_AFTER = 100  # frames ACKed before the kill
ANSWER_DELAY = 0.005  # the automation's time to answer: the backlog drains for seconds
CODE, AREA, ZONE = "E130", "01", "001"
SIGNAL_FRAME = b"5"  # a Contact ID frame's first byte (a link test's is 1)
TAKE_OVER_SECONDS = LEASE_SECONDS + 10  # the lease runs out, the survivor's next reading


def panel(n: int) -> str:
    return f"{1000 + n}"


def expected(n: int) -> bytes:
    """The frame of signal ``n`` as the output (its default receiver and line) sends it."""
    return contact_id_frame(RECEIVER_DEFAULT, LINE_DEFAULT, panel(n), CODE, AREA, ZONE)


def post(url: str, token: str, signals: range, committed: list[bytes]) -> None:
    """Post ``signals`` one after the other (so their commit order is theirs); the frame of each
    one answered 200 appended to ``committed``."""
    with httpx.Client(base_url=url) as client:
        for n in signals:
            body = {"dnis": "C1", "panel": panel(n), "code": CODE, "area": AREA,
                    "zone_or_user": ZONE}  # fmt: skip
            answer = client.post(**contact_id_request(body, "site1:rx1", token, None))
            assert answer.status_code == 200, answer.text
            committed.append(expected(n))


def acked(sim: AutomationSim) -> list[bytes]:
    """The signal frames the automation received and ACKed, in the order they came."""
    return [r.frame for r in sim.received if r.answer == ACK and r.frame[:1] == SIGNAL_FRAME]


def assert_delivered(automation: SimThread, committed: list[bytes]) -> None:
    """Once the last committed frame is ACKed: every committed frame came, in commit order, and
    only one (the one in flight at the kill) may have come twice, right after itself."""
    automation.until(lambda sim: committed[-1] in acked(sim), timeout=60)
    delivered = automation.call(lambda: acked(automation.sim))
    collapsed = [f for i, f in enumerate(delivered) if i == 0 or f != delivered[i - 1]]
    assert collapsed == committed
    assert len(delivered) - len(collapsed) <= 1, "more than the frame in flight went twice"


def add_output(data_dir: Path, automation: SimThread) -> None:
    cli(data_dir, "output", "add", "auto", "--protocol", "surgard", "--connect", automation.address)


def sender(data_dir: Path, nodes: list[Server]) -> Server | None:
    """The node that says it sends the output (``held_by``: HOST:PID of one of its processes)."""
    (listed,) = as_list(cli_json(data_dir, "output", "list"))
    if not listed["held_by"]:
        return None
    pid = int(listed["held_by"].rsplit(":", 1)[1])
    return next((node for node in nodes if pid in node.pids()), None)


def test_a_backlog_reaches_the_automation_after_a_sigkill_of_the_node(
    backend: str, tmp_path: Path, servers: Servers
) -> None:
    token = provision(tmp_path)
    with SimThread() as automation:
        automation.set(mode=NAK, delay=ANSWER_DELAY)
        automation.start()
        add_output(tmp_path, automation)
        node = servers.start(tmp_path)
        committed: list[bytes] = []
        post(node.url, token, range(SIGNALS), committed)
        automation.until(lambda sim: any(r.frame == committed[0] for r in sim.received))
        automation.set(mode=ACK)  # the automation back: the backlog drains
        automation.until(lambda sim: len(acked(sim)) >= KILL_AFTER)
        kill_node(node)
        assert committed[-1] not in automation.call(lambda: acked(automation.sim)), (
            "the backlog drained before the kill"
        )
        servers.start(tmp_path)  # the same data: its frames wait for it
        assert_delivered(automation, committed)


@pytest.mark.backends("postgresql")  # two nodes need PostgreSQL
def test_the_other_node_takes_the_output_over_when_its_holder_is_killed(
    backend: str, tmp_path: Path, servers: Servers
) -> None:
    token = provision(tmp_path)
    with SimThread() as automation:
        automation.set(delay=ANSWER_DELAY)
        automation.start()
        add_output(tmp_path, automation)
        nodes = [servers.start(tmp_path) for _ in range(2)]  # one database: the data dir's
        holder = wait_for(lambda: sender(tmp_path, nodes), "a node sends the output")
        (other,) = [node for node in nodes if node is not holder]
        committed: list[bytes] = []
        stream = threading.Thread(target=post, args=(other.url, token, range(SIGNALS), committed))
        stream.start()
        try:
            automation.until(lambda sim: len(acked(sim)) >= KILL_AFTER)
            assert automation.call(lambda: automation.sim.connections) == 1, "one node sends"
            kill_node(holder)
            wait_for(
                lambda: sender(tmp_path, nodes) is other,
                "the other node takes the output over",
                seconds=TAKE_OVER_SECONDS,
            )
        finally:
            stream.join(timeout=120)
        assert not stream.is_alive() and len(committed) == SIGNALS
        assert_delivered(automation, committed)
