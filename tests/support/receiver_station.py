"""A station provisioned for receiver links: a dnis with its mask, accounts with zones, links
and lines added by the command line, and what the simulated receiver's frames became."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from alarmhub.core.surgard import contact_id_frame
from tests.support.database import db_rows
from tests.support.processes import Server, cli
from tests.support.receiver_sim import ReceiverSim

DNIS = "4321"
MASK = "70####"
PANEL = "1234"
ACCOUNT = "701234"  # PANEL through MASK
ZONES = {"015": "BACK DOOR", "016": "GARAGE DOOR"}
RECEIVER, LINE = 1, 1


def provision(data_dir: Path, env: dict[str, str] | None = None) -> None:
    """The dnis, the account and its zones."""
    cli(data_dir, "dnis", "add", DNIS, "--mask", MASK, env=env)
    cli(data_dir, "account", "add", ACCOUNT, "--name", "Receiver Panel", env=env)
    for zone, description in ZONES.items():
        cli(data_dir, "zone", "set", ACCOUNT, zone, "--description", description, env=env)


def add_link(data_dir: Path, name: str, *transport: str, env: dict[str, str] | None = None) -> None:
    """A Sur-Gard link (``transport``: ``--listen HOST:PORT`` and the like) with receiver 1,
    line 1 on the station's dnis."""
    cli(data_dir, "receiver", "add", name, "--protocol", "surgard", *transport, env=env)
    cli(
        data_dir, "receiver", "line", "add", name,
        "--receiver", str(RECEIVER), "--line", str(LINE), "--dnis", DNIS, env=env,
    )  # fmt: skip


def listen_link(data_dir: Path, port: int) -> Callable[[dict[str, str]], None]:
    """What provisions the station and an MLR2 link listening on ``port`` of 127.0.0.1, given
    the nodes' environment (``cluster_nodes``'s ``provisioned``): the node that binds the port
    takes the link, another takes it when that one dies."""

    def provisioned(env: dict[str, str]) -> None:
        provision(data_dir, env)
        add_link(data_dir, "mlr2", "--listen", f"127.0.0.1:{port}", env=env)

    return provisioned


def contact_id(code: str, zone: str, area: str = "01") -> bytes:
    """A Contact ID frame of the station's panel on receiver 1, line 1."""
    return contact_id_frame(RECEIVER, LINE, PANEL, code, area, zone)


def event(n: int, code: str = "E602", panel: str = PANEL) -> bytes:
    """Event ``n`` of ``panel``: its area and zone spell ``n`` (0-99,999), so that each frame of
    a stream is told from the others in history."""
    return contact_id_frame(RECEIVER, LINE, panel, code, *identity(n))


def identity(n: int) -> tuple[str, str]:
    """The area and zone of :func:`event` ``n``."""
    return f"{n // 1000:02d}", f"{n % 1000:03d}"


HISTORY = "SELECT area, zone FROM history WHERE account_number = ? AND code = ?"


def history(data_dir: Path, code: str = "E602", url: str | None = None) -> Counter[tuple[str, str]]:
    """The account's history events of ``code``, counted by area and zone, in the database of
    ``data_dir`` (or at ``url``)."""
    rows = db_rows(data_dir, HISTORY, ACCOUNT, code, url=url)
    return Counter((r["area"], r["zone"]) for r in rows)


def lost(sim: ReceiverSim, data_dir: Path, url: str | None = None) -> list[tuple[str, str]]:
    """The frames of :func:`event` that ``sim`` saw ACKed and that are not (yet) in history."""
    acked = [identity(n) for n, d in enumerate(sim.events()) if d.acked]
    stored = history(data_dir, url=url)
    return [x for x in acked if stored[x] == 0]


def last_ack(sim: ReceiverSim) -> float:
    """The ``time.perf_counter()`` of ``sim``'s latest ACK (0: none yet)."""
    return max((d.acked_at or 0.0 for d in sim.events()), default=0.0)


def holder(nodes: list[Server], peer_port: int) -> Server | None:
    """The node with a TCP connection to ``peer_port`` on this machine (a ``--connect``
    link's receiver), read from /proc."""
    inodes = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "01" and int(fields[2].split(":")[1], 16) == peer_port:
            inodes.add(f"socket:[{fields[9]}]")
    for node in nodes:
        if node.process is None or node.process.poll() is not None:
            continue
        for pid in node.pids():
            try:
                descriptors = list(Path(f"/proc/{pid}/fd").iterdir())
            except OSError:
                continue
            for fd in descriptors:
                try:
                    if os.readlink(fd) in inodes:
                        return node
                except OSError:
                    continue
    return None
