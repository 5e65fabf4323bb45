"""A/B of the signaling interface: two checkouts' nodes side by side, their wrk rounds alternating.

Each checkout (a directory holding ``src/alarmhub`` and ``bench/server.py``, such as a
``git worktree`` of another commit) gets a node of its own on a new SQLite data directory, run by
this environment's Python with that checkout's ``src`` first on the path. Rounds alternate
between the two (A then B, then B then A, ...), each a trivial-handler run then a ``contact_id``
run, so that a noisy machine's slow and fast moments fall on both. Prints each round and the
medians of durable signals/s and of the ratio to the trivial handler.

    python bench/ab.py CHECKOUT_A CHECKOUT_B [--rounds 6] [--duration 8] [--connections 64]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # bench/run.py: the node, wrk and one round


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkouts", nargs=2, type=Path)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--duration", type=int, default=8, help="seconds per wrk run")
    parser.add_argument("--connections", type=int, default=64)
    args = parser.parse_args()
    wrk = run.ensure_wrk()
    nodes = [
        (checkout.resolve(), *run.start_node(checkout.resolve())) for checkout in args.checkouts
    ]
    results: dict[Path, list[tuple[float, float]]] = {node[0]: [] for node in nodes}
    try:
        for _, _, token, port, _ in nodes:
            run.wrk(wrk, f"http://127.0.0.1:{port}/bench/trivial", args.connections, 2, token)
        for number in range(args.rounds):
            for checkout, data_dir, token, port, _ in nodes if number % 2 == 0 else nodes[::-1]:
                base = f"http://127.0.0.1:{port}"
                trivial, signal = run.measure_round(
                    wrk, base, data_dir, args.connections, args.duration, token
                )
                rate = signal["durable_rate"]
                results[checkout].append((rate, rate / trivial["rate"]))
                print(
                    f"{checkout.name:>20}: trivial {trivial['rate']:7.0f} req/s | contact_id "
                    f"{rate:7.0f} durable signals/s (p99 {signal['p99_ms']:.1f} ms, non-2xx "
                    f"{signal['non_2xx']}) | ratio {rate / trivial['rate']:.1%}",
                    flush=True,
                )
    finally:
        for _, data_dir, _, _, server in nodes:
            server.terminate()
            server.wait(timeout=60)
            shutil.rmtree(data_dir, ignore_errors=True)
    for checkout, figures in results.items():
        rate = statistics.median(r for r, _ in figures)
        ratio = statistics.median(x for _, x in figures)
        print(f"{checkout}: median {rate:.0f} durable signals/s, ratio {ratio:.1%}")


if __name__ == "__main__":
    main()
