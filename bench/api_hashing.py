#!/usr/bin/env python3
"""Heartbeats while the integrator API hashes duress codes: the event loop's share of Argon2.

What is measured: the latency of ``GET /rx/bench-site:bench/hb`` (one request at a time, a new
one as soon as the last is answered) for ``--seconds``, first alone, then while ``--writers``
clients each send ``PUT /api/v1/accounts/{account}`` with a ``duress_code`` in a loop (every one
an Argon2 hash, about 0.1 s of CPU). Reported: p50, p99 and max of the heartbeats of each phase,
and the PUTs answered in the second.

Setting: a fresh SQLite data directory provisioned like ``pending_latency.py`` (driver, token,
dnis, accounts), a heartbeat token for ``bench-site:bench``, an API key with accounts:write, one
node (``alarmhub serve``, its default workers); node and clients share the machine.

    .venv/bin/python bench/api_hashing.py [--writers 8] [--seconds 15]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import threading
import time
from pathlib import Path

import httpx

from pending_latency import alarmhub, free_port, percentile, provision, start_node, stop_node

PAIR = "bench-site:bench"


def heartbeats(url: str, token: str, seconds: float) -> list[float]:
    """Heartbeat latencies (ms), one request at a time for ``seconds``."""
    taken: list[float] = []
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(timeout=30) as client:
        stop = time.monotonic() + seconds
        while time.monotonic() < stop:
            start = time.perf_counter()
            answer = client.get(f"{url}/rx/{PAIR}/hb", headers=headers)
            taken.append((time.perf_counter() - start) * 1000)
            assert answer.status_code == 200, answer.text
    return taken


def writer(url: str, key: str, account: str, stop: threading.Event, done: list[int]) -> None:
    """PUT the account with a duress code until told to stop; count the answers."""
    headers = {"Authorization": f"Bearer {key}"}
    body = {"name": f"Bench {account}", "duress_code": "red-fox-1"}
    with httpx.Client(timeout=60) as client:
        while not stop.is_set():
            answer = client.put(f"{url}/api/v1/accounts/{account}", json=body, headers=headers)
            assert answer.status_code in (200, 201), answer.text
            done.append(1)


def shown(name: str, taken: list[float]) -> dict[str, float]:
    ordered = sorted(taken)
    row = {"p50": percentile(ordered, 0.5), "p99": percentile(ordered, 0.99), "max": ordered[-1]}
    print(f"{name:>22}: " + "  ".join(f"{k} {v:8.1f} ms" for k, v in row.items()) +
          f"  ({len(taken)} heartbeats)")  # fmt: skip
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=15.0)
    args = parser.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="alarmhub-bench-hash-"))
    node = None
    try:
        provision(data_dir, args.writers)
        made = alarmhub(data_dir, "token", "create", "--name", "hb", "--driver", "bench",
                        "--heartbeat", PAIR, "--json")  # fmt: skip
        hb_token = json.loads(made)["token"]
        made = alarmhub(data_dir, "apikey", "create", "--name", "bench", "--scope",
                        "accounts:write", "--json")  # fmt: skip
        key = json.loads(made)["key"]
        port = free_port()
        node = start_node(data_dir, port, 10_000, data_dir / "node.log")
        url = f"http://127.0.0.1:{port}"
        heartbeats(url, hb_token, 2.0)  # warm up
        alone = shown("alone", heartbeats(url, hb_token, args.seconds))
        stop, done = threading.Event(), []
        threads = [
            threading.Thread(target=writer, args=(url, key, f"7{n:05d}", stop, done))
            for n in range(1, args.writers + 1)
        ]
        for thread in threads:
            thread.start()
        time.sleep(1.0)
        busy = shown(f"{args.writers} PUTs hashing", heartbeats(url, hb_token, args.seconds))
        stop.set()
        for thread in threads:
            thread.join()
        print(f"PUTs answered: {len(done)}; p99 ratio {busy['p99'] / alone['p99']:.1f}x")
    finally:
        if node is not None:
            stop_node(node)
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
