"""Real ``alarmhub`` processes for tests: a server on a free port, the command line as a user
runs it, a provisioned station, and polling without timing assertions."""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
from click.testing import CliRunner
from sqlalchemy import Connection
from sqlalchemy.engine import Engine

from alarmhub.cli import main
from alarmhub.store import operations
from tests.support.database import database_url

ROOT = Path(__file__).resolve().parent.parent.parent
T = TypeVar("T")


# Ports for test servers come from below the kernel's ephemeral range (32768 and up on Linux), so
# no outgoing connection of any test can take one between the check and the server's bind; each
# xdist worker has its own slice, so no two workers hand out the same port.
_PORTS_FROM, _PORTS_PER_WORKER, _WORKER_SLICES = 20_000, 1_500, 8


def _port_sequence() -> Iterator[int]:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    first = (
        _PORTS_FROM + (int(worker) % _WORKER_SLICES if worker.isdigit() else 0) * _PORTS_PER_WORKER
    )
    start = random.randrange(_PORTS_PER_WORKER)  # a rerun does not meet its predecessor's ports
    return (first + (start + i) % _PORTS_PER_WORKER for i in itertools.count())


_ports = _port_sequence()


def _bindable(port: int) -> bool:
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):  # DC-09 listens on both
        with socket.socket(socket.AF_INET, kind) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                return False
    return True


def free_port() -> int:
    """A port no one listens on, TCP or UDP, that no other test of this run is handed."""
    for _ in range(_PORTS_PER_WORKER):
        port = next(_ports)
        if _bindable(port):
            return port
    raise AssertionError("no free port left in this worker's slice")


_in_process = threading.Lock()


def _command_env(data_dir: Path, env: dict[str, str] | None) -> dict[str, str]:
    """What a command runs with: the data directory (its database made first, unless ``env``
    names another) and ``env``."""
    if "ALARMHUB_DATABASE_URL" not in (env or {}):
        database_url(data_dir)
    return {"ALARMHUB_DATA_DIR": str(data_dir), **(env or {})}


def cli(
    data_dir: Path,
    *args: str,
    check: bool = True,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``alarmhub ARGS...`` against ``data_dir`` in this process, through click's
    ``CliRunner`` (the same command function the installed entry point calls; ``cli_process``
    runs the entry point itself). Calls from several threads take turns."""
    full_env = _command_env(data_dir, env)
    with _in_process:
        result = CliRunner().invoke(main, list(args), input=stdin, env=full_env)
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        assert result.exc_info is not None
        stderr += "".join(traceback.format_exception(*result.exc_info))
    done = subprocess.CompletedProcess(["alarmhub", *args], result.exit_code, result.stdout, stderr)
    return _checked(done, check)


def cli_process(
    data_dir: Path,
    *args: str,
    check: bool = True,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the installed entry point, ``python -m alarmhub ARGS...``, as a user would."""
    full_env = {**os.environ, **_command_env(data_dir, env)}
    result = subprocess.run(
        [sys.executable, "-m", "alarmhub", *args],
        capture_output=True,
        text=True,
        env=full_env,
        input=stdin,
        timeout=60,
    )
    return _checked(result, check)


def _checked(
    result: subprocess.CompletedProcess[str], check: bool
) -> subprocess.CompletedProcess[str]:
    if check and result.returncode != 0:
        raise AssertionError(
            f"alarmhub {' '.join(result.args[1:])} exited {result.returncode}:\n"
            f"{result.stdout}{result.stderr}"
        )
    return result


def cli_json(data_dir: Path, *args: str) -> object:
    return json.loads(cli(data_dir, *args, "--json").stdout)


TEST_WORKERS = os.environ.get("ALARMHUB_TEST_WORKERS", "1")
"""The worker processes of every test server (``serve --workers``) that names none itself:
one by default; ``ALARMHUB_TEST_WORKERS=2 make test`` runs the whole end-to-end suite, the
crash tests included, with two (tests/e2e/test_workers.py always runs two). With two on a
2-core machine the suite's browser and schedule tests run near their deadlines."""
WORKER_STARTED = re.compile(r'event="worker started" worker=(\d+) pid=(\d+)')


@dataclass
class Server:
    """An ``alarmhub serve`` process on a free port, with TEST_WORKERS worker processes unless
    ``extra_args`` say how many."""

    data_dir: Path
    port: int = field(default_factory=free_port)
    extra_args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None
    log_dir: Path | None = None  # where its log goes: the data directory unless set

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 90.0) -> Server:
        """Start the server and wait until it answers ``/healthz`` (a generous deadline: on a
        loaded machine of two cores the interpreter's start and imports alone took over 30 s)."""
        self.log_path = (self.log_dir or self.data_dir) / f"server-{self.port}.log"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if "ALARMHUB_DATABASE_URL" not in self.env:
            # --demo provisions only a new database: leave it unmigrated for the node
            database_url(self.data_dir, migrated="--demo" not in self.extra_args)
        log = self.log_path.open("ab")
        workers = () if "--workers" in self.extra_args else ("--workers", TEST_WORKERS)
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
                *workers,
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
        self.kill()  # its fixture fails in setup and never stops it: it must not outlive the run
        raise AssertionError(f"server did not become healthy:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path else ""

    def pids(self) -> list[int]:
        """The server's process and its descendants (workers, writer, delivery process)."""
        assert self.process is not None
        found, queue = [], [self.process.pid]
        while queue:
            pid = queue.pop()
            found.append(pid)
            try:
                children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            except OSError:
                continue
            queue += [int(child) for child in children]
        return found

    def rss_kib(self) -> int:
        """The resident memory of the node: its processes' together (workers included)."""
        total = 0
        for pid in self.pids():
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue  # ended meanwhile
            found = re.search(r"^VmRSS:\s+(\d+) kB$", status, re.M)
            total += int(found.group(1)) if found else 0
        assert total, "no process of the node found"
        return total

    def worker_pids(self) -> dict[int, list[int]]:
        """The worker processes the server started, by worker number, oldest first (its log)."""
        started: dict[int, list[int]] = {}
        for index, pid in WORKER_STARTED.findall(self.log()):
            started.setdefault(int(index), []).append(int(pid))
        return started

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


def start_all(servers: Iterable[Server]) -> list[Server]:
    """Start each server, in order; if one cannot start, kill those started before it (the
    test's ``finally`` never gets them) and raise."""
    started: list[Server] = []
    try:
        for server in servers:
            started.append(server.start())
    except BaseException:
        for server in started:
            server.kill()
        raise
    return started


def contact_id_request(
    body: object, pair: str, token: str, headers: dict[str, str] | None
) -> dict[str, Any]:
    """The arguments of an httpx POST of ``body`` (JSON, or bytes and text as they are) to
    ``/rx/PAIR/contact_id`` under ``token``."""
    request: dict[str, Any] = {
        "url": f"/rx/{pair}/contact_id",
        "headers": {"Authorization": f"Bearer {token}", **(headers or {})},
        "timeout": 10,
    }
    if isinstance(body, bytes | str):
        return {**request, "content": body}
    return {**request, "json": body}


class PostsSignals:
    """``post``: a Contact ID signal sent with the station's token through its ``client``."""

    token: str

    @property
    def client(self) -> httpx.Client:
        raise NotImplementedError

    def post(
        self,
        body: object,
        pair: str = "site1:rx1",
        token: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        return self.client.post(**contact_id_request(body, pair, token or self.token, headers))


@dataclass
class Station(PostsSignals):
    """A provisioned data directory with a running server and a token for driver ``rx1``."""

    server: Server
    token: str
    data_dir: Path

    @property
    def url(self) -> str:
        return self.server.url

    @functools.cached_property
    def client(self) -> httpx.Client:
        """A client of the server (``station.client.get("/healthz")``), a new connection for
        each request, as ``httpx.get`` and ``httpx.post`` make."""
        no_reuse = httpx.Limits(max_keepalive_connections=0)
        return httpx.Client(base_url=self.url, timeout=10, limits=no_reuse)

    def log(self) -> str:
        return self.server.log()

    def close(self) -> None:
        if "client" in self.__dict__:
            self.client.close()


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


class Runner:
    """What in-process code needs of the node's writer: a write transaction off the loop."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def run(self, work: Callable[[Connection], Any]) -> Any:
        return await asyncio.to_thread(operations.run, self.engine, work)


def as_list(value: object) -> list[dict[str, Any]]:
    """A JSON answer that must be an array (of objects)."""
    assert isinstance(value, list)
    return value


def as_dict(value: object) -> dict[str, Any]:
    """A JSON answer that must be an object."""
    assert isinstance(value, dict)
    return value
