"""Test helpers that act as DC-09 panels: frames over TCP and UDP to a real server, the station
the DC-09 end-to-end tests share, and panels under load (:class:`Load`: each account sends its
numbered events as fast as they are ACKed, and sends again what got no answer) with what of
them was stored."""

from __future__ import annotations

import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from my_dc09_spt.msg.dc05_msg import dc05_msg
from my_dc09_spt.msg.dc09_msg import dc09_msg

from tests.support.database import db_rows
from tests.support.processes import Server, cli, free_port

DNIS = "1234"
MASK = "70####"
KEY_HEX = "000102030405060708090A0B0C0D0E0F"
KEY = bytes.fromhex(KEY_HEX)
KEYED_ACCOUNT = "5678"
ACCOUNTS = {"701234": "Plain Panel", "705678": "Keyed Panel", "701002": "Test Reporter"}


def read_answers(sock: socket.socket, count: int, timeout: float = 10.0) -> list[bytes]:
    """``count`` answer frames from a TCP socket (fewer when it closes or times out)."""
    sock.settimeout(timeout)
    data = b""
    while data.count(b"\r") < count:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            break
        if not chunk:
            break
        data += chunk
    return [part + b"\r" for part in data.split(b"\r") if part]


def kind(answer: bytes | None) -> str | None:
    """ACK, NAK, DUH (or *ACK) of an answer frame."""
    if answer is None:
        return None
    start = answer.index(b'"') + 1
    return answer[start : answer.index(b'"', start)].decode()


@dataclass
class Panel:
    """Sends frames to a server's DC-09 port."""

    port: int

    def tcp(self, frames: list[bytes], answers: int | None = None) -> list[bytes]:
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as sock:
            for wire in frames:
                sock.sendall(wire)
            return read_answers(sock, len(frames) if answers is None else answers)

    def udp(self, wire: bytes, timeout: float = 5.0) -> bytes | None:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.settimeout(timeout)
            sock.sendto(wire, ("127.0.0.1", self.port))
            try:
                return sock.recvfrom(65536)[0]
            except TimeoutError:
                return None


def spt(account: str = "1234", key: bytes | None = None, offset: int = 0) -> dc09_msg:
    """my-dc09-spt's transmitter for ``account`` on line 0."""
    return dc09_msg(account, key=key, line=0, offset=offset)


def provision(data_dir: Path) -> None:
    cli(data_dir, "dnis", "add", DNIS, "--mask", MASK)
    for number, name in ACCOUNTS.items():
        cli(data_dir, "account", "add", number, "--name", name)
    cli(data_dir, "dc09", "line", "add", "--receiver", "0", "--line", "0", "--dnis", DNIS)
    cli(data_dir, "dc09", "key", "set", KEYED_ACCOUNT, "--key", KEY_HEX)


def start(data_dir: Path, env: dict[str, str] | None = None) -> tuple[Server, Panel]:
    dc09_port = free_port()
    server = Server(
        data_dir, extra_args=("--dc09-listen", f"127.0.0.1:{dc09_port}"), env=env or {}
    ).start()
    return server, Panel(dc09_port)


def signal_count(data_dir: Path, where: str = "1=1", *params: object) -> int:
    return int(
        db_rows(data_dir, f"SELECT count(*) AS n FROM signal WHERE {where}", *params)[0]["n"]  # noqa: S608
    )


def settle(seconds: float = 0.3) -> None:
    time.sleep(seconds)


ANSWER_SECONDS = 2.0  # a panel's wait for the answer to a frame before it sends it again


# the burglary codes a panel's frames go through, 100,000 frames each: the area (2 digits) and
# the zone (3) spell only 100,000 numbers, and a panel of a 30-minute soak sends more
CODES = tuple(f"E{code}" for code in range(130, 140))  # as stored: the qualifier, the code


def frame_for(account: str, n: int) -> bytes:
    """Frame ``n`` of ``account`` (0-999,999): an E13x whose code, area and zone spell ``n``."""
    code, area, zone = identity(account, n)[1:]
    payload = dc05_msg.dc05event(account, {"code": code[1:], "area": area, "zone": zone})
    return spt(account).dc09block(n % 9999 + 1, "ADM-CID", payload).encode()


def identity(account: str, n: int) -> tuple[str, str, str, str]:
    """The stored panel, code (qualifier E), area and zone of :func:`frame_for` ``n``."""
    number = n % 100_000
    return account, CODES[n // 100_000], str(number // 1000).zfill(2), str(number % 1000).zfill(3)


@dataclass
class Load:
    """Panels sending their numbered frames over TCP, one at a time, each as soon as the one
    before was ACKed (:meth:`run`, one thread per account); a frame not answered within
    ANSWER_SECONDS, or whose connection failed, is sent again on a new connection: to the
    panel's own port of ``ports``, or to the next that can be reached when that one cannot
    (a panel's second receiver)."""

    ports: tuple[int, ...]
    acked: set[tuple[str, int]] = field(default_factory=set)
    sent: set[tuple[str, int]] = field(default_factory=set)
    sends: int = 0  # frames sent, those sent again included
    last_ack: float = 0.0  # the monotonic time of the latest ACK
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self, account: str, first: int = 0) -> None:
        """Send ``account``'s frames to ``ports[first]`` (or the next) until :attr:`stop`."""
        n = 0
        sock: socket.socket | None = None
        while not self.stop.is_set():
            try:
                if sock is None:
                    sock = self._connect(first)
                with self.lock:
                    self.sent.add((account, n))
                    self.sends += 1
                sock.sendall(frame_for(account, n))
                answers = read_answers(sock, 1, timeout=ANSWER_SECONDS)
                if answers and kind(answers[0]) == "ACK":
                    with self.lock:
                        self.acked.add((account, n))
                        self.last_ack = time.monotonic()
                    n += 1
                elif not answers:  # no answer: send it again, as a panel does
                    sock.close()
                    sock = None
            except OSError:
                if sock is not None:
                    sock.close()
                sock = None
                time.sleep(0.05)
        if sock is not None:
            sock.close()

    def _connect(self, first: int) -> socket.socket:
        """A connection to ``ports[first]``, else to the first of the others that takes it."""
        order = self.ports[first:] + self.ports[:first]
        for port in order[:-1]:
            try:
                return socket.create_connection(("127.0.0.1", port), timeout=1)
            except OSError:
                continue
        return socket.create_connection(("127.0.0.1", order[-1]), timeout=1)

    def missing(
        self, stored: Counter[tuple[str, str, str, str]]
    ) -> list[tuple[str, str, str, str]]:
        """The ACKed frames not in ``stored`` (:func:`stored`)."""
        with self.lock:
            acked = [identity(a, n) for a, n in self.acked]
        return [x for x in acked if stored[x] == 0]


def stored(data_dir: Path, url: str | None = None) -> Counter[tuple[str, str, str, str]]:
    """The DC-09 signals in the database of ``data_dir`` (or at ``url``), counted by panel,
    code, area and zone."""
    rows = db_rows(
        data_dir, "SELECT panel, code, area, zone FROM signal WHERE destination = 'dc09'", url=url
    )
    return Counter((r["panel"], r["code"], r["area"], r["zone"]) for r in rows)
