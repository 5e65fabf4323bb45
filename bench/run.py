"""Load benchmark of the signaling interface: wrk against ``contact_id`` and a trivial handler.

Starts a fresh node (bench/server.py) on a free port with a new SQLite data directory, then runs
wrk in alternating rounds against ``POST /rx/bench:bench/contact_id`` (unique bodies, every one
validated and durably committed) and ``POST /bench/trivial`` (the same requests answered with
the same bytes, doing nothing). Durable signals/s counts the rows in the database, not answers.

    python bench/run.py [--duration 10] [--connections 64] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGET_RATE = 6000
TARGET_P99_MS = 50
TARGET_RATIO = 0.60


def ensure_wrk() -> str:
    found = shutil.which("wrk")
    if found:
        return found
    print("wrk not found; installing Debian's wrk package", flush=True)
    subprocess.run(["apt-get", "update", "-qq"], check=False)
    subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=True)
    return shutil.which("wrk") or sys.exit("wrk could not be installed")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wrk_command(binary: str, url: str, connections: int, duration: int) -> list[str]:
    return [
        binary, "-t1", f"-c{connections}", f"-d{duration}s", "--latency",
        "-s", str(HERE / "contact_id.lua"), url,
    ]  # fmt: skip


def wrk(binary: str, url: str, connections: int, duration: int, token: str) -> dict[str, float]:
    out = subprocess.run(
        wrk_command(binary, url, connections, duration),
        check=True, capture_output=True, text=True, env={**os.environ, "ALARMHUB_TOKEN": token},
    ).stdout  # fmt: skip
    return wrk_summary(out)


def wrk_summary(out: str) -> dict[str, float]:
    """The figures of the JSON line that contact_id.lua prints."""
    line = next(x for x in out.splitlines() if x.startswith("JSON "))
    data = json.loads(line[5:])
    seconds = data["duration_us"] / 1e6
    return {
        "requests": data["requests"],
        "rate": data["requests"] / seconds,
        "seconds": seconds,
        "p50_ms": data["p50_us"] / 1000,
        "p99_ms": data["p99_us"] / 1000,
        "non_2xx": data["errors_status"],
        "socket_errors": data["errors_connect"] + data["errors_timeout"],
    }


def stored(db: Path) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return int(conn.execute("SELECT count(*) FROM signal").fetchone()[0])


def start_node(checkout: Path) -> tuple[Path, str, int, subprocess.Popen[str]]:
    """A node of ``checkout`` (its ``src`` first on the path) on a new SQLite data directory,
    with the ``bench`` driver and token: (data directory, token, port, process)."""
    data_dir = Path(tempfile.mkdtemp(prefix="alarmhub-bench-"))
    env = {**os.environ, "PYTHONPATH": str(checkout / "src")}

    def cli(*args: str) -> str:
        return subprocess.run(
            [sys.executable, "-m", "alarmhub", *args, "--data-dir", str(data_dir)],
            env=env, check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip

    cli("driver", "add", "bench")
    token = json.loads(cli("token", "create", "--name", "bench", "--driver", "bench", "--json"))
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, str(checkout / "bench" / "server.py"), f"127.0.0.1:{port}", str(data_dir)],
        stdout=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    assert server.stdout is not None
    if server.stdout.readline().strip() != "ready":
        sys.exit(f"the benchmark node of {checkout} did not start")
    return data_dir, str(token["token"]), port, server


def measure_round(
    binary: str, base: str, data_dir: Path, connections: int, duration: int, token: str
) -> tuple[dict[str, float], dict[str, float]]:
    """One round: wrk against the trivial handler, then against ``contact_id``; the second's
    ``durable_rate`` counts the rows that reached the database."""
    trivial = wrk(binary, f"{base}/bench/trivial", connections, duration, token)
    before = stored(data_dir / "alarmhub.db")
    signal = wrk(binary, f"{base}/rx/bench:bench/contact_id", connections, duration, token)
    time.sleep(0.2)
    rows = stored(data_dir / "alarmhub.db") - before
    signal["durable_rate"] = rows / signal["seconds"]
    signal["rows"] = rows
    return trivial, signal


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=int, default=10, help="seconds per round")
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args()
    binary = ensure_wrk()

    data_dir, token, port, server = start_node(HERE.parent)
    try:
        base = f"http://127.0.0.1:{port}"
        wrk(binary, f"{base}/bench/trivial", args.connections, 2, token)  # warm-up
        rounds = []
        for number in range(1, args.rounds + 1):
            trivial, signal = measure_round(
                binary, base, data_dir, args.connections, args.duration, token
            )
            ratio = signal["durable_rate"] / trivial["rate"]
            rounds.append({"trivial": trivial, "contact_id": signal, "ratio": ratio})
            print(
                f"round {number}: trivial {trivial['rate']:8.0f} req/s "
                f"(p50 {trivial['p50_ms']:.1f} ms, p99 {trivial['p99_ms']:.1f} ms) | "
                f"contact_id {signal['durable_rate']:8.0f} durable signals/s "
                f"(p50 {signal['p50_ms']:.1f} ms, p99 {signal['p99_ms']:.1f} ms, "
                f"non-2xx {signal['non_2xx']}) | ratio {ratio:.1%}",
                flush=True,
            )
    finally:
        server.terminate()
        server.wait(timeout=60)
        shutil.rmtree(data_dir, ignore_errors=True)

    rate = statistics.median(r["contact_id"]["durable_rate"] for r in rounds)
    p99 = statistics.median(r["contact_id"]["p99_ms"] for r in rounds)
    ratio = statistics.median(r["ratio"] for r in rounds)
    cores = os.cpu_count()
    print(
        f"\nmedian of {len(rounds)} rounds, {args.connections} connections, {cores} cores:\n"
        f"  durable signals/s {rate:8.0f}   target >= {TARGET_RATE}: "
        f"{'met' if rate >= TARGET_RATE else 'NOT met'}\n"
        f"  p99 latency (ms)  {p99:8.1f}   target < {TARGET_P99_MS}: "
        f"{'met' if p99 < TARGET_P99_MS else 'NOT met'}\n"
        f"  ratio to trivial  {ratio:8.1%}   target >= {TARGET_RATIO:.0%}: "
        f"{'met' if ratio >= TARGET_RATIO else 'NOT met'}"
    )
    if args.json:
        args.json.write_text(json.dumps({"cores": cores, "rounds": rounds}, indent=2))


if __name__ == "__main__":
    main()
