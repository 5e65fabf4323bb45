"""DC-09 receivers side by side: alarmhub's against pysiaalarm's, on the same frames.

100 concurrent TCP senders (panels) each send an ADM-CID frame, wait for its ACK, and send the
next; frames ACKed per second is the figure. alarmhub runs as ``alarmhub serve --dc09-listen``
with SQLite (WAL, synchronous=FULL) and commits every frame before its ACK; pysiaalarm runs its
asyncio TCP server (``SIAClient``, TCP) with a no-op callback and stores nothing.

    .venv/bin/python bench/dc09_receiver.py [--senders 100] [--seconds 10]

pysiaalarm is installed into this interpreter's environment when it is missing (it is needed
here only, never by alarmhub).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ACCOUNT_BASE = 1000
WARMUP_SECONDS = 2.0


def crc16(data: bytes) -> int:
    """CRC-16/ARC, written out here so that the frames do not come from alarmhub's code."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


def frames_for(sender: int, count: int) -> list[bytes]:
    """The frames of one sender: its own account, every sequence number a new event."""
    account = str(ACCOUNT_BASE + sender)
    result = []
    for n in range(count):
        body = (
            f'"ADM-CID"{n % 9999 + 1:04d}L0#{account}'
            f"[#{account}|1130 {n // 1000 % 100:02d} {n % 1000:03d}]"
        ).encode()
        result.append(b"\n%04X%04X%s\r" % (crc16(body), len(body), body))
    return result


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_port(port: int, process: subprocess.Popen[bytes], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the receiver exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"nothing listens on port {port}")


def ensure_pysiaalarm() -> None:
    try:
        import pysiaalarm  # noqa: F401
    except ImportError:
        print("installing pysiaalarm (benchmark only) ...", flush=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "pysiaalarm"], check=True
        )


PYSIAALARM_SERVER = textwrap.dedent(
    """
    import asyncio, sys
    from pysiaalarm import SIAAccount
    from pysiaalarm.aio import CommunicationsProtocol, SIAClient

    async def nothing(event):
        pass

    async def main(port, senders):
        accounts = [SIAAccount(str({base} + i), None) for i in range(senders)]
        client = SIAClient("127.0.0.1", port, accounts, nothing,
                           protocol=CommunicationsProtocol.TCP)
        await client.async_start()
        await asyncio.Event().wait()

    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2])))
    """
).replace("{base}", str(ACCOUNT_BASE))


class Sender(asyncio.Protocol):
    """One panel: a frame out, its ACK in, the next frame out."""

    def __init__(self, frames: list[bytes], counts: dict[str, int]) -> None:
        self._frames = frames
        self._next = 0
        self._counts = counts
        self._buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self._send()

    def _send(self) -> None:
        assert self.transport is not None
        self.transport.write(self._frames[self._next % len(self._frames)])
        self._next += 1

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        while b"\r" in self._buffer:
            answer, _, self._buffer = self._buffer.partition(b"\r")
            if b'"ACK"' in answer:
                self._counts["acked"] += 1
            else:
                self._counts["other"] += 1
            self._send()


async def load(port: int, senders: int, seconds: float) -> tuple[float, int, int]:
    """Frames ACKed per second over ``seconds`` after a warm-up; ACKs and other answers."""
    loop = asyncio.get_running_loop()
    counts = {"acked": 0, "other": 0}
    frames = [FRAMES[i] for i in range(senders)]  # built before the clock starts
    transports = []
    for i in range(senders):
        transport, _ = await loop.create_connection(
            lambda i=i: Sender(frames[i], counts), "127.0.0.1", port
        )
        transports.append(transport)
    await asyncio.sleep(WARMUP_SECONDS)
    start_acked, started = counts["acked"], time.perf_counter()
    await asyncio.sleep(seconds)
    acked, elapsed = counts["acked"] - start_acked, time.perf_counter() - started
    for transport in transports:
        transport.close()
    await asyncio.sleep(0.5)
    return acked / elapsed, counts["acked"], counts["other"]


FRAMES: list[list[bytes]] = []
FRAMES_PER_SENDER = 4000  # more than a sender sends in a run: every frame is a new event


def run_load(port: int, senders: int, seconds: float) -> tuple[float, int, int]:
    import uvloop

    while len(FRAMES) < senders:
        FRAMES.append(frames_for(len(FRAMES), FRAMES_PER_SENDER))

    return uvloop.run(load(port, senders, seconds))


def bench_alarmhub(senders: int, seconds: float) -> tuple[float, int, int, int]:
    with tempfile.TemporaryDirectory(prefix="alarmhub-dc09-bench-") as tmp:
        data_dir = Path(tmp)
        env = {**os.environ, "ALARMHUB_DATA_DIR": str(data_dir), "ALARMHUB_LOG_LEVEL": "warning"}
        alarmhub = [sys.executable, "-m", "alarmhub"]
        for args in (
            ["dnis", "add", "1234", "--mask", "70####"],
            ["dc09", "line", "add", "--receiver", "0", "--line", "0", "--dnis", "1234"],
        ):
            subprocess.run([*alarmhub, *args], env=env, check=True, capture_output=True)
        port, http = free_port(), free_port()
        process = subprocess.Popen(
            [*alarmhub, "serve", "--listen", f"127.0.0.1:{http}",
             "--dc09-listen", f"127.0.0.1:{port}"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            wait_port(port, process)
            rate, acked, other = run_load(port, senders, seconds)
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=120)
        with sqlite3.connect(data_dir / "alarmhub.db") as conn:
            stored = conn.execute("SELECT count(*) FROM signal").fetchone()[0]
        return rate, acked, other, stored


def bench_pysiaalarm(senders: int, seconds: float) -> tuple[float, int, int]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", PYSIAALARM_SERVER, str(port), str(senders)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_port(port, process)
        return run_load(port, senders, seconds)
    finally:
        process.kill()
        process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--senders", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    ensure_pysiaalarm()
    from importlib.metadata import version

    print(f"{args.senders} TCP senders, {args.seconds:.0f} s measured after {WARMUP_SECONDS:.0f} s"
          f" of warm-up; {os.cpu_count()} cores; pysiaalarm {version('pysiaalarm')}")  # fmt: skip
    rate_a, acked_a, other_a, stored = bench_alarmhub(args.senders, args.seconds)
    print(f"alarmhub    {rate_a:9.0f} frames ACKed/s   (ACKs {acked_a}, other answers {other_a},"
          f" signals stored {stored})", flush=True)  # fmt: skip
    rate_p, acked_p, other_p = bench_pysiaalarm(args.senders, args.seconds)
    print(f"pysiaalarm  {rate_p:9.0f} frames ACKed/s   (ACKs {acked_p}, other answers {other_p},"
          " stores nothing)", flush=True)  # fmt: skip
    print(f"ratio       {rate_a / rate_p:9.2f}x")
    if stored < acked_a:
        raise SystemExit(f"alarmhub ACKed {acked_a} frames but stored {stored}")


if __name__ == "__main__":
    main()
