"""Shared fixtures: real server processes on free ports, the CLI as a subprocess."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
T = TypeVar("T")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cli(
    data_dir: Path,
    *args: str,
    check: bool = True,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``alarmhub ARGS...`` against ``data_dir`` as a user would."""
    full_env = {**os.environ, "ALARMHUB_DATA_DIR": str(data_dir), **(env or {})}
    result = subprocess.run(
        [sys.executable, "-m", "alarmhub", *args],
        capture_output=True,
        text=True,
        env=full_env,
        input=stdin,
        timeout=60,
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"alarmhub {' '.join(args)} exited {result.returncode}:\n{result.stdout}{result.stderr}"
        )
    return result


def cli_json(data_dir: Path, *args: str) -> object:
    return json.loads(cli(data_dir, *args, "--json").stdout)


@dataclass
class Server:
    """An ``alarmhub serve`` process on a free port."""

    data_dir: Path
    port: int = field(default_factory=free_port)
    extra_args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> Server:
        self.log_path = self.data_dir / f"server-{self.port}.log"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "alarmhub",
                "serve",
                "--listen",
                f"127.0.0.1:{self.port}",
                "--data-dir",
                str(self.data_dir),
                *self.extra_args,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **self.env},
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"server exited {self.process.returncode}:\n{self.log()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"server did not become healthy:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path else ""

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(sig)
        code = self.process.wait(timeout=timeout)
        return code

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)


@dataclass
class Station:
    """A provisioned data directory with a running server and a token for driver ``rx1``."""

    server: Server
    token: str
    data_dir: Path

    @property
    def url(self) -> str:
        return self.server.url

    def post(
        self,
        body: object,
        pair: str = "site1:rx1",
        token: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        all_headers = {"Authorization": f"Bearer {token or self.token}", **(headers or {})}
        if isinstance(body, bytes | str):
            return httpx.post(
                f"{self.url}/rx/{pair}/contact_id", content=body, headers=all_headers, timeout=10
            )
        return httpx.post(
            f"{self.url}/rx/{pair}/contact_id", json=body, headers=all_headers, timeout=10
        )


def provision(data_dir: Path) -> str:
    """Drivers rx1 and rx2, a token for rx1 that may beat site1:rx1; returns the token."""
    cli(data_dir, "driver", "add", "rx1")
    cli(data_dir, "driver", "add", "rx2")
    created = cli_json(
        data_dir,
        "token",
        "create",
        "--name",
        "main",
        "--driver",
        "rx1",
        "--heartbeat",
        "site1:rx1",
    )
    assert isinstance(created, dict)
    return str(created["token"])


@pytest.fixture(scope="module")
def station(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Station]:
    data_dir = tmp_path_factory.mktemp("station")
    token = provision(data_dir)
    server = Server(data_dir).start()
    try:
        yield Station(server, token, data_dir)
    finally:
        server.stop()


def wait_for(
    condition: Callable[[], T | None], what: str, seconds: float = 10.0, every: float = 0.05
) -> T:
    """Poll ``condition`` until it returns something truthy, and return that; fail only when it
    never does within ``seconds`` (a generous deadline, never a timing assertion)."""
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"never happened within {seconds} s: {what}"
        time.sleep(every)


def db_rows(data_dir: Path, sql: str, *params: object) -> list[sqlite3.Row]:
    """Rows from the station's SQLite database (``alarmhub.db`` of ``data_dir``), read-only."""
    conn = sqlite3.connect(f"file:{data_dir / 'alarmhub.db'}?mode=ro", uri=True, timeout=10)
    conn.row_factory = sqlite3.Row
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()
