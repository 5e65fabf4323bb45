"""Test helpers that act as DC-09 panels: frames over TCP and UDP to a real server, and the
station the DC-09 end-to-end tests share."""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass
from pathlib import Path

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
