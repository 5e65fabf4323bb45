"""DC-09 receivers side by side: alarmhub's against pysiaalarm's, on the same frames.

100 concurrent TCP senders each send an ADM-CID frame, wait for its answer, and send the next;
frames ACKed per second is the figure, with each frame's latency (sent to ACK) and the receiver's
CPU a frame. alarmhub runs as ``alarmhub serve --dc09-listen`` with SQLite (WAL,
synchronous=FULL) and commits every frame before its ACK, so its ACKs are durable signals;
pysiaalarm runs its asyncio TCP server (``SIAClient``, TCP) with a no-op callback and stores
nothing. Both run for the whole benchmark; rounds alternate between them on the same frames.

Mixes (bench/mix.py):

- ``realistic``: a station's mix from provisioned accounts (``--accounts``, CSV import; the line
  ``R1L1`` maps them through the mix's dnis and mask), spread over the senders (a sender carries
  the accounts whose panel number is its own modulo the senders). Sent plain, and AES-128
  encrypted from ``--aes-accounts`` further accounts that have keys (the unknown-account share
  stays plain: a stranger has no key).
- ``unknown``: the earlier worst case and frames: each sender an account of its own
  (``1000``..) that no account data has, every frame a burglary (``1130``).

The node's runaway limit is set beyond reach (``--runaway-limit``): a benchmark account sends
about once a second, or, in the unknown mix, hundreds of times, and would be put in runaway
(history only) after its tenth signal, as the earlier runs of the unknown mix were. Its
supervision interval is an hour: the accounts of one encryption are silent while the other's
rounds run.

pysiaalarm is given every account of the frames (keys included), so that it ACKs them all.
CPU is user plus system time from /proc (alarmhub: the node and its children, the workers and
the writer process; reported apart as receiving, the node and its workers, and storing, the
writer) from the start of a round until the receiver is idle again, divided by the frames ACKed
in the round.

    .venv/bin/python bench/dc09_receiver.py [--mix realistic,unknown] [--rounds 3]
        [--seconds 8] [--senders 100] [--encryption plain,aes128]

pysiaalarm is installed into this interpreter's environment when it is missing (it is needed
here only, never by alarmhub).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import random
import signal
import socket
import sqlite3
import statistics
import string
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import mix
from pending_latency import node_cpu_seconds, percentile, writer_cpu_seconds
from run import settle

ROOT = Path(__file__).resolve().parent.parent
ACCOUNT_BASE = 1000  # the unknown mix's accounts
WARMUP_SECONDS = 2.0
AES_KEY = b"0123456789ABCDEF"  # pysiaalarm takes the key's characters; alarmhub its hex digits
TARGET_PLAIN = 2.0  # realistic mix: alarmhub's rate against pysiaalarm's
TARGET_AES = 3.0
RUNAWAY_LIMIT = 1_000_000
SUPERVISION_SECONDS = 3600


def _crc_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
        table.append(crc)
    return table


CRC_TABLE = _crc_table()


def crc16(data: bytes) -> int:
    """CRC-16/ARC, written out here so that the frames do not come from alarmhub's code."""
    crc = 0
    for byte in data:
        crc = (crc >> 8) ^ CRC_TABLE[(crc ^ byte) & 0xFF]
    return crc


def framed(body: bytes) -> bytes:
    return b"\n%04X%04X%s\r" % (crc16(body), len(body), body)


def frames_for(sender: int, count: int, start: int = 0) -> list[bytes]:
    """The unknown mix's frames of one sender: its own account, every sequence number a new
    event (frames ``start``..``start+count-1``)."""
    account = str(ACCOUNT_BASE + sender)
    result = []
    for n in range(start, start + count):
        body = (
            f'"ADM-CID"{n % 9999 + 1:04d}L0#{account}'
            f"[#{account}|1130 {n // 1000 % 100:02d} {n % 1000:03d}]"
        ).encode()
        result.append(framed(body))
    return result


PAD = (string.ascii_letters + string.digits).encode()


def encrypted(text: bytes, rng: random.Random) -> bytes:
    """AES-128-CBC, zero IV, of ``text`` behind random padding and a ``|``, in hex."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    pad = 16 - (len(text) + 1) % 16
    plain = bytes(rng.choice(PAD) for _ in range(pad)) + b"|" + text
    encryptor = Cipher(algorithms.AES(AES_KEY), modes.CBC(bytes(16))).encryptor()
    return (encryptor.update(plain) + encryptor.finalize()).hex().upper().encode()


@dataclass
class Stream:
    """The frames of one (mix, encryption): signals drawn on from round to round, a sequence
    number per panel (``sequence``, shared by the streams of a run), so that no frame of a run
    repeats one before it (alarmhub would take it for a retransmission and store it once)."""

    mix: str
    encryption: str
    senders: int
    accounts: int
    first: int
    signals: Iterator[mix.Signal] | None = None
    sequence: dict[str, int] = field(default_factory=dict)
    legacy_next: int = 0
    rng: random.Random = field(default_factory=lambda: random.Random(9))

    def batch(self, count: int) -> list[list[bytes]]:
        """About ``count`` frames in all, split over the senders (realistic: by panel)."""
        per = max(1, count // self.senders)
        if self.mix == "unknown":
            frames = [frames_for(i, per, self.legacy_next) for i in range(self.senders)]
            self.legacy_next += per
            return frames
        if self.signals is None:
            self.signals = mix.realistic_stream(self.accounts, self.first)
        # AES timestamps 15 s ahead: valid from 5 s before the build to 55 s after it, in both
        # receivers' windows (40 s back, 20 s ahead), so one batch serves both receivers' rounds
        at = (datetime.now(UTC) + timedelta(seconds=15)).strftime("_%H:%M:%S,%m-%d-%Y").encode()
        out: list[list[bytes]] = [[] for _ in range(self.senders)]
        for s in itertools.islice(self.signals, count):
            seq = self.sequence.get(s.panel, 0)
            self.sequence[s.panel] = seq + 1
            event = b"%s%s %s %s]" % (
                b"1" if s.code[0] == "E" else b"3",
                s.code[1:].encode(), s.area.encode(), s.zone.encode(),
            )  # fmt: skip
            panel = s.panel.encode()
            if self.encryption == "aes128" and s.kind != "unknown account":
                data = encrypted(event + at, self.rng)
                body = b'"*ADM-CID"%04dR1L1#%s[%s' % (seq % 9999 + 1, panel, data)
            else:
                body = b'"ADM-CID"%04dR1L1#%s[#%s|%s' % (seq % 9999 + 1, panel, panel, event)
            out[int(s.panel) % self.senders].append(framed(body))
        return out


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
    import asyncio, json, sys
    from pysiaalarm import SIAAccount
    from pysiaalarm.aio import CommunicationsProtocol, SIAClient

    async def nothing(event):
        pass

    async def main(port, accounts_file):
        with open(accounts_file) as fh:
            accounts = [SIAAccount(account, key) for account, key in json.load(fh)]
        client = SIAClient("127.0.0.1", port, accounts, nothing,
                           protocol=CommunicationsProtocol.TCP)
        await client.async_start()
        await asyncio.Event().wait()

    asyncio.run(main(int(sys.argv[1]), sys.argv[2]))
    """
)


class Sender(asyncio.Protocol):
    """One connection: a frame out, its answer in, the next frame out."""

    def __init__(self, frames: list[bytes], counts: dict[str, Any]) -> None:
        self._frames = frames
        self._next = 0
        self._counts = counts
        self._buffer = b""
        self._sent_at = 0.0
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self._send()

    def _send(self) -> None:
        assert self.transport is not None
        if self._next >= len(self._frames):
            self._counts["ran_out"] += 1
            return
        self._sent_at = time.perf_counter()
        self.transport.write(self._frames[self._next])
        self._next += 1

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        while b"\r" in self._buffer:
            answer, _, self._buffer = self._buffer.partition(b"\r")
            if b'ACK"' in answer:  # "ACK" or "*ACK"
                self._counts["acked"] += 1
                if self._counts["measuring"]:
                    self._counts["latencies"].append(time.perf_counter() - self._sent_at)
            else:
                self._counts["other"] += 1
            self._send()


async def load(port: int, frames: list[list[bytes]], seconds: float) -> dict[str, Any]:
    """Frames ACKed per second over ``seconds`` after a warm-up, their latencies, the answers."""
    loop = asyncio.get_running_loop()
    counts: dict[str, Any] = {
        "acked": 0, "other": 0, "ran_out": 0, "measuring": False, "latencies": [],
    }  # fmt: skip
    transports = []
    for sender_frames in frames:
        transport, _ = await loop.create_connection(
            lambda f=sender_frames: Sender(f, counts), "127.0.0.1", port
        )
        transports.append(transport)
    await asyncio.sleep(WARMUP_SECONDS)
    start_acked, started = counts["acked"], time.perf_counter()
    counts["measuring"] = True
    await asyncio.sleep(seconds)
    counts["measuring"] = False
    acked, elapsed = counts["acked"] - start_acked, time.perf_counter() - started
    for transport in transports:
        transport.close()
    await asyncio.sleep(0.5)
    latencies = sorted(counts["latencies"])
    return {
        "rate": acked / elapsed, "acked": counts["acked"], "other": counts["other"],
        "ran_out": counts["ran_out"], "p50_ms": 1000 * percentile(latencies, 0.5),
        "p99_ms": 1000 * percentile(latencies, 0.99),
    }  # fmt: skip


def run_round(pid: int, port: int, frames: list[list[bytes]], seconds: float) -> dict[str, Any]:
    import uvloop

    cpu0, writer0 = node_cpu_seconds(pid), writer_cpu_seconds(pid)
    sending0 = time.process_time()  # the load generator's own CPU: this process
    result: dict[str, Any] = uvloop.run(load(port, frames, seconds))
    result["sender_cpu_us"] = 1e6 * (time.process_time() - sending0) / max(1, result["acked"])
    result["cpu_us"] = 1e6 * (settle(pid) - cpu0) / max(1, result["acked"])
    writer = writer_cpu_seconds(pid) - writer0  # pysiaalarm: none, all its CPU receives
    result["own_cpu_us"] = result["cpu_us"] - 1e6 * writer / max(1, result["acked"])
    return result


# receivers ---------------------------------------------------------------------------------


def provision_alarmhub(data_dir: Path, mixes: list[str], accounts: int, aes_accounts: int) -> None:
    def alarmhub(*args: str) -> str:
        return subprocess.run(
            [sys.executable, "-m", "alarmhub", *args, "--data-dir", str(data_dir)],
            check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip

    if "unknown" in mixes:  # the earlier set-up: a line whose mask names no account
        alarmhub("dnis", "add", "1234", "--mask", "70####")
        alarmhub("dc09", "line", "add", "--receiver", "0", "--line", "0", "--dnis", "1234")
    if "realistic" in mixes:
        alarmhub("dnis", "add", mix.DNIS, "--mask", mix.MASK)
        alarmhub("dc09", "line", "add", "--receiver", "1", "--line", "1", "--dnis", mix.DNIS)
        mix.write_accounts_csv(data_dir / "accounts.csv", accounts + aes_accounts)
        added = json.loads(alarmhub("account", "import", str(data_dir / "accounts.csv"), "--json"))
        if added["added"] != accounts + aes_accounts:
            raise SystemExit(f"account import added {added['added']} of {accounts + aes_accounts}")
    if "realistic" in mixes and aes_accounts:
        # no command sets many keys at once: the store's own call, as `alarmhub dc09 key set`
        # makes it, once an account (a process a key through the command would take minutes)
        from alarmhub.cli.output import open_store, station_key
        from alarmhub.store import dc09

        engine, key = open_store(data_dir), station_key(data_dir)
        for panel in range(accounts + 1, accounts + aes_accounts + 1):
            dc09.set_key(engine, key, mix.panel_id(panel), AES_KEY.hex())
        engine.dispose()


def pysiaalarm_accounts(mixes: list[str], senders: int, accounts: int, aes: int) -> list[Any]:
    keyed = set(range(accounts + 1, accounts + aes + 1))
    out: list[Any] = []
    if "unknown" in mixes:
        out += [[str(ACCOUNT_BASE + i), None] for i in range(senders)]
    if "realistic" in mixes:
        out += [[mix.panel_id(p), AES_KEY.decode() if p in keyed else None]
                for p in range(1, accounts + aes + 1)]  # fmt: skip
        out += [[mix.panel_id(mix.UNKNOWN_PANEL + i), None] for i in range(mix.UNKNOWN_PANELS)]
    return out


@dataclass
class Receivers:
    alarmhub: subprocess.Popen[bytes]
    alarmhub_port: int
    pysiaalarm: subprocess.Popen[bytes]
    pysiaalarm_port: int
    data_dir: Path


def start(args: argparse.Namespace, tmp: Path) -> Receivers:
    data_dir = tmp / "alarmhub"
    data_dir.mkdir()
    provision_alarmhub(data_dir, args.mix, args.accounts, args.aes_accounts)
    env = {**os.environ, "ALARMHUB_DATA_DIR": str(data_dir), "ALARMHUB_LOG_LEVEL": "warning"}
    env["ALARMHUB_RUNAWAY_LIMIT"] = str(args.runaway_limit)
    env["ALARMHUB_DC09_SUPERVISION_SECONDS"] = str(SUPERVISION_SECONDS)
    port, http = free_port(), free_port()
    node = subprocess.Popen(
        [sys.executable, "-m", "alarmhub", "serve", "--listen", f"127.0.0.1:{http}",
         "--dc09-listen", f"127.0.0.1:{port}"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    accounts_file = tmp / "pysiaalarm-accounts.json"
    accounts_file.write_text(json.dumps(
        pysiaalarm_accounts(args.mix, args.senders, args.accounts, args.aes_accounts)))  # fmt: skip
    sia_port = free_port()
    sia = subprocess.Popen(
        [sys.executable, "-c", PYSIAALARM_SERVER, str(sia_port), str(accounts_file)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    wait_port(port, node)
    wait_port(sia_port, sia)
    time.sleep(1.0)  # the node's first look-ups and caches
    return Receivers(node, port, sia, sia_port, data_dir)


def stop(receivers: Receivers) -> None:
    receivers.pysiaalarm.kill()
    receivers.pysiaalarm.wait()
    receivers.alarmhub.send_signal(signal.SIGTERM)
    receivers.alarmhub.wait(timeout=120)


# the run -----------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mix", type=parse_list(mix.MIXES), default=list(mix.MIXES))
    parser.add_argument("--encryption", type=parse_list(("plain", "aes128")),
                        default=["plain", "aes128"], help="of the realistic mix")  # fmt: skip
    parser.add_argument("--senders", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=8.0, help="measured a round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--accounts", type=int, default=mix.ACCOUNTS, help="plain, provisioned")
    parser.add_argument("--aes-accounts", type=int, default=1000, help="with AES-128 keys")
    parser.add_argument("--runaway-limit", type=int, default=RUNAWAY_LIMIT,
                        help="the node's; 10, the default of a station, puts every sender in "
                        "runaway after its tenth signal (history only)")  # fmt: skip
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args()
    if "aes128" not in args.encryption:
        args.aes_accounts = 0
    ensure_pysiaalarm()
    from importlib.metadata import version

    load_avg = os.getloadavg()
    configs = [
        (m, e) for m in args.mix for e in (args.encryption if m == "realistic" else ["plain"])
    ]
    print(f"{args.senders} TCP senders, {args.seconds:g} s measured after {WARMUP_SECONDS:g} s "
          f"of warm-up, {args.rounds} rounds of {', '.join(f'{m}/{e}' for m, e in configs)}; "
          f"{os.cpu_count()} cores; pysiaalarm {version('pysiaalarm')}; load average "
          f"{load_avg[0]:.2f} {load_avg[1]:.2f} {load_avg[2]:.2f}", flush=True)  # fmt: skip
    # one sequence number per panel across the streams: the plain and AES-128 streams share
    # the unknown accounts' panels, and a frame of one that repeated a panel, sequence number
    # and event of the other would be a retransmission (ACKed again, stored once)
    sequence: dict[str, int] = {}
    streams = {
        (m, e): Stream(m, e, args.senders, args.aes_accounts if e == "aes128" else args.accounts,
                       args.accounts + 1 if e == "aes128" else 1, sequence=sequence)
        for m, e in configs
    }  # fmt: skip
    expected = dict.fromkeys(configs, 20_000.0)  # frames/s a batch is made for, then measured
    results: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="alarmhub-dc09-bench-") as tmp:
        started = time.monotonic()
        receivers = start(args, Path(tmp))
        print(f"provisioned and started in {time.monotonic() - started:.1f} s", flush=True)
        try:
            for number in range(args.rounds):
                for config in configs if number % 2 == 0 else configs[::-1]:
                    count = int(expected[config] * (WARMUP_SECONDS + args.seconds + 1) * 1.5)
                    frames = streams[config].batch(count)
                    pair = [
                        ("alarmhub", receivers.alarmhub.pid, receivers.alarmhub_port),
                        ("pysiaalarm", receivers.pysiaalarm.pid, receivers.pysiaalarm_port),
                    ]
                    for name, pid, port in pair if number % 2 == 0 else pair[::-1]:  # fmt: skip
                        result = run_round(pid, port, frames, args.seconds)
                        results.setdefault((*config, name), []).append(result)
                        show(number + 1, config, name, result)
                    expected[config] = max(r[-1]["rate"] for k, r in results.items()
                                           if k[:2] == config)  # fmt: skip
        finally:
            stop(receivers)
        db = receivers.data_dir / "alarmhub.db"
        with sqlite3.connect(db) as conn:
            stored = conn.execute("SELECT count(*) FROM signal").fetchone()[0]
            paths = dict(conn.execute("SELECT path, count(*) FROM alarm GROUP BY path").fetchall())
    acked = sum(r["acked"] for k, rs in results.items() if k[2] == "alarmhub" for r in rs)
    summary = summarize(results, configs)
    print(f"\nalarmhub stored {stored:,} signals for {acked:,} ACKs; alarms by path {paths}; "
          f"run {time.monotonic() - started:.0f} s")  # fmt: skip
    show_summary(summary)
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "rounds": {
            "/".join(k): v for k, v in results.items()}}, indent=2))  # fmt: skip
    if stored < acked:
        raise SystemExit(f"alarmhub ACKed {acked} frames but stored {stored}")
    if any(r["ran_out"] for rs in results.values() for r in rs):
        raise SystemExit("a sender ran out of frames: its round's rate is too low")


def show(number: int, config: tuple[str, str], name: str, r: dict[str, Any]) -> None:
    print(
        f"round {number} {config[0]:>9}/{config[1]:<6} {name:<10} {r['rate']:8.0f} frames "
        f"ACKed/s  p50 {r['p50_ms']:6.1f} ms  p99 {r['p99_ms']:6.1f} ms  CPU "
        f"{r['cpu_us']:5.0f} µs a frame ({r['own_cpu_us']:4.0f} receiving, the rest storing)  "
        f"(other answers {r['other']}, ran out {r['ran_out']})",
        flush=True,
    )


def summarize(
    results: dict[tuple[str, str, str], list[dict[str, Any]]], configs: list[tuple[str, str]]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for config in configs:
        a, p = results[(*config, "alarmhub")], results[(*config, "pysiaalarm")]
        entry: dict[str, Any] = {}
        for name, rs in (("alarmhub", a), ("pysiaalarm", p)):
            entry[name] = {
                key: statistics.median(r[key] for r in rs)
                for key in ("rate", "p50_ms", "p99_ms", "cpu_us", "own_cpu_us", "sender_cpu_us")
            }
            entry[name]["rates"] = [round(r["rate"]) for r in rs]
        entry["ratio"] = statistics.median(x["rate"] / y["rate"] for x, y in zip(a, p, strict=True))
        entry["cpu_ratio"] = statistics.median(
            x["cpu_us"] / y["cpu_us"] for x, y in zip(a, p, strict=True)
        )
        out["/".join(config)] = entry
    return out


def show_summary(summary: dict[str, Any]) -> None:
    print("medians of the rounds (ratios within a round, then the median):")
    for config, s in summary.items():
        a, p = s["alarmhub"], s["pysiaalarm"]
        target = {"realistic/plain": TARGET_PLAIN, "realistic/aes128": TARGET_AES}.get(config)
        verdict = ""
        if target:
            verdict = f"   target >= {target:g}x: {'met' if s['ratio'] >= target else 'NOT met'}"
        print(
            f"  {config}: alarmhub {a['rate']:.0f} durable signals/s (p50 {a['p50_ms']:.1f} ms, "
            f"p99 {a['p99_ms']:.1f} ms, {a['cpu_us']:.0f} µs CPU a signal: node and workers "
            f"{a['own_cpu_us']:.0f}, writer {a['cpu_us'] - a['own_cpu_us']:.0f}); pysiaalarm "
            f"{p['rate']:.0f} frames/s (p50 {p['p50_ms']:.1f} ms, p99 {p['p99_ms']:.1f} ms, "
            f"{p['cpu_us']:.0f} µs CPU a frame)\n"
            f"    ratio {s['ratio']:.2f}x{verdict}; CPU a frame {s['cpu_ratio']:.2f}x "
            f"pysiaalarm's; the load generator's own CPU {a['sender_cpu_us']:.0f} µs a frame "
            f"(alarmhub's rounds), {p['sender_cpu_us']:.0f} µs (pysiaalarm's)"
        )


def parse_list(allowed: tuple[str, ...]) -> Any:
    def parse(text: str) -> list[str]:
        names = [x.strip() for x in text.split(",") if x.strip()]
        if not names or any(n not in allowed for n in names):
            raise argparse.ArgumentTypeError(f"some of {', '.join(allowed)}")
        return names

    return parse


if __name__ == "__main__":
    main()
