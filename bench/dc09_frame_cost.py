"""The DC-09 receiver's CPU a frame in the node, without sockets or the writer process.

Frames of the realistic mix (bench/mix.py, built as bench/dc09_receiver.py builds them: ADM-CID
on ``R1L1``, plain from provisioned accounts and AES-128 from keyed ones, the unknown-account
share plain) go through the receiver's own TCP protocol (``_Connection.data_received``) on uvloop,
from 100 connections in turn, one frame a read, as 100 senders that wait for each answer send
them. The transports are in memory; the writer is a fake whose futures are resolved at once, so
each ACK goes out on the next turns of the loop, after its "commit", as in the node. The
accounts are those of a node in its steady state: the line maps to the mix's dnis, the keyed
accounts have their key, every provisioned account is already supervised.

The figure is CPU time (``time.process_time``) of feeding the frames and running the loop until
every answer is written, divided by the frames: the best of ``--repeats`` runs of ``--frames``
frames each (frames are built before each run, outside the measured time). Every frame must be
ACKed; anything else stops the benchmark.

    .venv/bin/python bench/dc09_frame_cost.py [--frames 50000] [--repeats 5]
        [--encryption plain,aes128] [--against REV] [--profile FILE]

``--against REV`` makes it an A/B tool: the same measurement of the source tree of the git
revision ``REV`` (``git archive``, in a temporary directory, first on ``PYTHONPATH``), in
separate processes that alternate with runs of this checkout, and the ratio of the two.
``--profile FILE`` writes a cProfile of one run instead (plain or AES: the first encryption).
``--instructions`` counts instructions instead of CPU time, which a busy machine does not
disturb: valgrind's callgrind over a run, less its count over a dry run that builds the same
frames and feeds none, divided by the frames (some 60 s a run and 25 s a thousand frames;
an AES-128 run must end within about 50 s of the building of its frames, whose timestamps
would be out of the window after: 2,000 frames at most).

    .venv/bin/python bench/dc09_frame_cost.py --instructions --frames 2000 --repeats 1
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mix
from dc09_receiver import AES_KEY, Stream

ROOT = Path(__file__).resolve().parent.parent
SENDERS = 100
ACCOUNTS = mix.ACCOUNTS  # plain, provisioned through the line's dnis and mask
AES_ACCOUNTS = 1000  # with AES-128 keys, after the plain ones
ENCRYPTIONS = ("plain", "aes128")


class MemoryTransport:
    """A TCP transport that keeps what is written to it."""

    def __init__(self, number: int) -> None:
        self._peer = (f"10.0.{number // 250}.{number % 250 + 1}", 40000 + number)
        self.written: list[bytes] = []

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._peer if name == "peername" else default

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def is_closing(self) -> bool:
        return False

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def close(self) -> None:
        raise SystemExit("the receiver closed a connection")

    abort = close


class ImmediateWriter:
    """The writer as the receiver sees it; every signal is stored at once (a new incident)."""

    def __init__(self) -> None:
        from alarmhub.store.commit import Stored

        self._stored = Stored
        self.signals = 0

    def enqueue(self, sig: Any, /) -> asyncio.Future[Any]:
        self.signals += 1
        future = asyncio.get_running_loop().create_future()
        future.set_result(self._stored(self.signals))
        return future

    async def run(self, work: Any, /) -> Any:
        raise AssertionError("not used on the frame path")


def account_book(writer: ImmediateWriter) -> Any:
    """The node's accounts, as loaded from a station provisioned like bench/dc09_receiver.py's,
    every provisioned account already reporting (supervised)."""
    from cryptography.fernet import Fernet

    from alarmhub.clock import now_us
    from alarmhub.dc09.accounts import AccountBook
    from alarmhub.store import dc09

    keyed = [mix.panel_id(p) for p in range(ACCOUNTS + 1, ACCOUNTS + AES_ACCOUNTS + 1)]
    real_lines, real_setups = dc09.lines, dc09.setups
    dc09.lines = lambda conn: {("1", "1"): mix.DNIS}  # type: ignore[assignment]
    dc09.setups = lambda conn, key: {a: dc09.AccountSetup(AES_KEY, None) for a in keyed}  # type: ignore[assignment]
    try:
        book = AccountBook(None, writer, None, Fernet(Fernet.generate_key()), 3600, 5.0)  # type: ignore[arg-type]
        book.refresh(None)  # type: ignore[arg-type]
    finally:
        dc09.lines, dc09.setups = real_lines, real_setups
    now = now_us()
    book.merge(
        [
            dc09.Reported(mix.panel_id(p), now, "1", "1", False)
            for p in range(1, ACCOUNTS + AES_ACCOUNTS + 1)
        ]
    )
    return book


async def feed(encryption: str, frames: int, profile: Path | None, dry: bool) -> dict[str, Any]:
    """One measured run: CPU seconds, frames, answers (``dry``: everything but the frames)."""
    from alarmhub.dc09 import server

    writer = ImmediateWriter()
    receiver = server.Receiver(
        account_book(writer),
        writer,
        [],
        max_connections=SENDERS,
        max_per_address=SENDERS,
        idle_seconds=60,
    )
    connections = []
    for number in range(SENDERS):
        connection = server._Connection(receiver)
        transport = MemoryTransport(number)
        connection.connection_made(transport)  # type: ignore[arg-type]
        connections.append((connection, transport))
    if encryption == "aes128":
        stream = Stream("realistic", encryption, SENDERS, AES_ACCOUNTS, ACCOUNTS + 1)
    else:
        stream = Stream("realistic", encryption, SENDERS, ACCOUNTS, 1)
    per_sender = stream.batch(frames * 3 // 2 + 20 * SENDERS)  # panels are not spread evenly
    rounds = min(len(x) for x in per_sender)
    ordered = [per_sender[s][r] for r in range(rounds) for s in range(SENDERS)][:frames]
    if len(ordered) < frames:
        raise SystemExit(f"built {len(ordered)} frames, not {frames}")
    if dry:
        return {"cpu_s": 0.0, "frames": len(ordered), "signals": 0}
    sleep = asyncio.sleep
    profiler = cProfile.Profile() if profile is not None else None
    if profiler is not None:
        profiler.enable()
    started = time.process_time()
    for at in range(0, len(ordered), SENDERS):
        for (connection, _), wire in zip(connections, ordered[at : at + SENDERS], strict=False):
            connection.data_received(wire)
        for _ in range(3):  # the commits' callbacks, then the answers' delivery
            await sleep(0)
    while any(c.pending for c, _ in connections):
        await sleep(0)
    cpu = time.process_time() - started
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(profile)
    answers = [a for _, t in connections for a in t.written]
    acked = sum(1 for a in answers if a[9:14] in (b'"ACK"', b'"*ACK'))
    if acked != len(ordered) or len(answers) != len(ordered):
        raise SystemExit(
            f"{encryption}: {acked} ACKs, {len(answers)} answers, {len(ordered)} frames"
        )
    return {"cpu_s": cpu, "frames": len(ordered), "signals": writer.signals}


def run_once(
    encryption: str, frames: int, profile: Path | None = None, dry: bool = False
) -> dict[str, Any]:
    import uvloop

    logging.getLogger("alarmhub").setLevel(logging.WARNING)
    result: dict[str, Any] = uvloop.run(feed(encryption, frames, profile, dry))
    return result


def child(tree: Path | None, encryption: str, frames: int, instructions: bool) -> float:
    """µs a frame of one run in a fresh process, of ``tree``'s source (None: this checkout);
    or, ``instructions``, the instructions a frame (callgrind: a run's less a dry run's)."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(tree / "src"), env.get("PYTHONPATH")])
        )
    command = [sys.executable, __file__, "--one", encryption, "--frames", str(frames)]
    if not instructions:
        out = subprocess.run(command, env=env, check=True, capture_output=True, text=True)
        result = json.loads(out.stdout)
        return float(result["cpu_s"]) / result["frames"] * 1e6
    counts = []
    for dry in (False, True):
        out = subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command]
            + (["--dry"] if dry else []),
            env=env, check=True, capture_output=True, text=True,
        )  # fmt: skip
        counts.append(int(re.findall(r"Collected : (\d+)", out.stderr)[-1]))
    return (counts[0] - counts[1]) / frames


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--encryption", default=",".join(ENCRYPTIONS))
    parser.add_argument("--against", metavar="REV", help="also measure this git revision (A/B)")
    parser.add_argument("--profile", type=Path, help="write a cProfile of one run to this file")
    parser.add_argument(
        "--instructions", action="store_true", help="callgrind's count instead (fewer frames)"
    )
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a single run, its result as JSON
    parser.add_argument("--dry", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_once(args.one, args.frames, dry=args.dry)))
        return
    encryptions = [e for e in args.encryption.split(",") if e]
    if bad := set(encryptions) - set(ENCRYPTIONS):
        raise SystemExit(f"unknown encryption {', '.join(sorted(bad))}")
    if args.profile is not None:
        run_once(encryptions[0], args.frames, args.profile)
        print(f"profile of {args.frames} {encryptions[0]} frames written to {args.profile}")
        return
    unit = "instructions" if args.instructions else "µs"
    print(f"{args.frames} frames a run, best of {args.repeats}, {unit} a frame; load average "
          f"{os.getloadavg()[0]:.2f}", flush=True)  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="dc09-frame-cost-") as tmp:
        trees: dict[str, Path | None] = {"this checkout": None}
        if args.against:
            archive = subprocess.run(
                ["git", "-C", str(ROOT), "archive", args.against, "src"],
                check=True, capture_output=True,
            ).stdout  # fmt: skip
            subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
            trees = {args.against: Path(tmp), **trees}
        for encryption in encryptions:
            best: dict[str, float] = {}
            for _ in range(args.repeats):
                for name, tree in trees.items():  # alternating, so both see the same moments
                    us = child(tree, encryption, args.frames, args.instructions)
                    best[name] = min(best.get(name, us), us)
            line = ", ".join(f"{name} {us:,.1f}" for name, us in best.items())
            if args.against:
                ratio = best["this checkout"] / best[args.against]
                line += f" ({ratio:.2f}x)"
            print(f"{encryption}: {line}", flush=True)


if __name__ == "__main__":
    main()
