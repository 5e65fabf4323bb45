"""The counts of a mixed load against what the database holds, for the fault tests and the soak:
HTTP senders (:class:`~tests.support.cluster_node.Senders`), DC-09 panels
(:class:`~tests.support.dc09_panel.Load`) and a receiver link (a
:class:`~tests.support.receiver_sim.ReceiverSim`): per interface, what was acknowledged, what of
it is missing, what was stored or routed twice; said and checked in one place."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tests.support import dc09_panel
from tests.support import receiver_station as station
from tests.support.cluster_node import Database, Senders, routed_twice, stored_keys
from tests.support.processes import Server, wait_for
from tests.support.receiver_sim import ReceiverSim, Settings, TcpClient

RECEIVER_FRAMES = 100_000  # the receiver's queue: as many as its frames' numbers can spell
RECEIVER_GAP_SECONDS = 0.015
"""The receiver's pause after each ACKed frame: at most about 60 frames a second, so that its
queue lasts the soak's 30 minutes (sent back to back, one link went 70 frames/s and ran out)."""


class Direct(Database, Protocol):
    """A database the nodes reach by the multi-host URL, with the URL of its primary itself."""

    def direct(self) -> str: ...


@dataclass(frozen=True)
class MixedTally:
    http: Sequence[Senders]
    panels: dc09_panel.Load
    sim: ReceiverSim
    twice: int  # signals routed more than once
    acknowledged: set[str]
    missing: set[str]
    dc09_missing: list[tuple[str, str, str]]
    dc09_twice: int
    receiver_missing: list[tuple[str, str]]
    receiver_twice: int
    refused: Counter[tuple[int | None, str]]

    def summary(self, senders: str = "", panels: str = "") -> str:
        """Three lines, one an interface (``senders`` and ``panels`` said of their load)."""
        http, sim = self.http, self.sim
        return (
            f"  HTTP{senders}: acknowledged {len(self.acknowledged)} "
            f"({', '.join(str(len(s.acknowledged)) for s in http)} by node), missing "
            f"{len(self.missing)}, routed twice {self.twice}; answers not 200: "
            f"{dict(self.refused)}\n"
            f"  DC-09{panels}: acknowledged {len(self.panels.acked)} ({self.panels.sends} "
            f"frames sent, resends included), missing {len(self.dc09_missing)}, stored twice "
            f"{self.dc09_twice}\n"
            f"  receiver link (MLR2, stop-and-wait): acknowledged {len(sim.acked())}, missing "
            f"{len(self.receiver_missing)}, stored twice {self.receiver_twice}, NAKs "
            f"{sum(d.naks for d in sim.events())}, connections {sim.connections}"
        )

    def assert_nothing_lost(self) -> None:
        """Nothing acknowledged missing, nothing routed or stored twice, every answer not 200
        a ``STORE-1`` (or no answer at all: a connection a kill closed)."""
        assert not self.missing, f"acknowledged but not stored: {sorted(self.missing)[:10]}"
        assert not self.dc09_missing, f"DC-09 ACKed, not stored: {sorted(self.dc09_missing)[:10]}"
        assert not self.receiver_missing, (
            f"receiver ACKed, not stored: {self.receiver_missing[:10]}"
        )
        assert self.twice == 0, "a signal was routed more than once"
        assert self.dc09_twice == 0, "a DC-09 frame was stored more than once"
        assert {code for status, code in self.refused if status is not None} <= {"STORE-1"}


def more_than_once(counts: Counter[Any]) -> int:
    """How many of what ``counts`` counts came more than once (stored, delivered)."""
    return sum(1 for count in counts.values() if count > 1)


def tally_mixed(
    db: Direct, data_dir: Path, http: Sequence[Senders], panels: dc09_panel.Load, sim: ReceiverSim
) -> MixedTally:
    """The counts once the load has stopped (every stored signal routed first: waited for)."""
    twice = routed_twice(db)
    acknowledged = set().union(*(s.acknowledged for s in http))
    frames = dc09_panel.stored(data_dir, url=db.direct())
    received = station.history(data_dir, url=db.direct())
    refused = Counter(
        (status, code) for s in http for _, status, code in s.answers if status != 200
    )
    return MixedTally(
        http, panels, sim, twice, acknowledged, acknowledged - stored_keys(db),
        panels.missing(frames), more_than_once(frames),
        station.lost(sim, data_dir, url=db.direct()),
        more_than_once(received), refused,
    )  # fmt: skip


@contextmanager
def running(
    nodes: Sequence[Server], token: str, senders: int, dc09_ports: Sequence[int], panels: int,
    listen: int,
) -> Iterator[tuple[list[Senders], dc09_panel.Load, ReceiverSim]]:  # fmt: skip
    """The mixed load on ``nodes`` until the block ends: ``senders`` HTTP senders a node,
    ``panels`` DC-09 panels (accounts 8000.., alternately on each node's port of ``dc09_ports``,
    each turning to another when its own cannot be reached) and a simulated Sur-Gard MLR2 on the
    ``--listen`` receiver link at port ``listen``; the senders, the panels and the receiver."""
    load = dc09_panel.Load(tuple(dc09_ports))
    threads = [
        threading.Thread(target=load.run, args=(f"8{i:03d}", i % len(nodes)), daemon=True)
        for i in range(panels)
    ]
    sim = ReceiverSim(
        TcpClient("127.0.0.1", listen),
        Settings(link_test_every=0, frame_gap=RECEIVER_GAP_SECONDS),
    )
    with ExitStack() as stack:
        http = [
            stack.enter_context(Senders(node, token, senders, prefix=f"node{number}-"))
            for number, node in enumerate(nodes, 1)
        ]
        try:
            for thread in threads:
                thread.start()
            sim.start().send(station.event(n) for n in range(RECEIVER_FRAMES))
            yield http, load, sim
        finally:
            stack.close()  # the HTTP senders stopped
            load.stop.set()
            for thread in threads:
                thread.join(timeout=30)
            sim.stop()


def acknowledging_again(
    panels: dc09_panel.Load, sim: ReceiverSim, since: float, since_perf: float, when: str
) -> None:
    """Wait until the DC-09 panels and the receiver link each have an ACK after ``since``
    (``time.monotonic()``; ``since_perf``: the same moment in ``time.perf_counter()``, the
    receiver's clock); ``when`` says which moment, in the failure's message."""
    wait_for(lambda: panels.last_ack > since, f"a DC-09 ACK {when}", 60)
    assert sim.queue, "the receiver sent its whole queue: nothing left to be ACKed"
    wait_for(lambda: station.last_ack(sim) > since_perf, f"a receiver ACK {when}", 60, every=0.5)
