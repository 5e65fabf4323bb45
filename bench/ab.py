"""A/B of the signaling interface: two checkouts' nodes side by side, their wrk rounds alternating.

Each checkout (a directory holding ``src/alarmhub`` and ``bench/server.py``, such as a
``git worktree`` of another commit) gets a node of its own on a new SQLite data directory, run by
this environment's Python with that checkout's ``src`` first on the path. Rounds alternate
between the two (A then B, then B then A, ...), each a trivial-handler run then a ``contact_id``
run of the mix (``--mix``, bench/mix.py: ``unknown``, every signal of an unknown account, or
``realistic``, a station's mix on provisioned accounts), so that a noisy machine's slow and fast
moments fall on both. Prints each round and the medians of durable signals/s, of the ratio to the
trivial handler's rate, and of the CPU of node and writer a durable signal against a trivial
request's.

    python bench/ab.py CHECKOUT_A CHECKOUT_B [--mix unknown] [--rounds 6] [--duration 8]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mix  # bench/mix.py: the signal mixes
import run  # bench/run.py: the node, wrk and one round


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkouts", nargs=2, type=Path)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--duration", type=int, default=8, help="seconds per wrk run")
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--mix", choices=("unknown", "realistic"), default="unknown")
    parser.add_argument("--accounts", type=int, default=mix.ACCOUNTS, help="realistic mix")
    args = parser.parse_args()
    wrk = run.ensure_wrk()
    accounts = args.accounts if args.mix == "realistic" else 0
    nodes = [
        (checkout.resolve(), *run.start_node(checkout.resolve(), accounts))
        for checkout in args.checkouts
    ]
    bodies: dict[Path, Path | None] = {}
    for checkout, data_dir, *_ in nodes:
        bodies[checkout] = data_dir / "bodies.txt" if accounts else None
        if accounts:
            run.write_bodies(data_dir / "bodies.txt", accounts)
    results: dict[Path, list[tuple[float, float, float]]] = {node[0]: [] for node in nodes}
    try:
        for checkout, _, token, port, _ in nodes:
            url = f"http://127.0.0.1:{port}/bench/trivial"
            run.wrk(wrk, url, args.connections, 2, token, bodies[checkout])
        for number in range(args.rounds):
            for checkout, data_dir, token, port, server in (
                nodes if number % 2 == 0 else nodes[::-1]
            ):
                base, db, body = (
                    f"http://127.0.0.1:{port}",
                    data_dir / "alarmhub.db",
                    bodies[checkout],
                )
                trivial = run.measured_wrk(
                    wrk,
                    f"{base}/bench/trivial",
                    args.connections,
                    args.duration,
                    token,
                    body,
                    server.pid,
                    db,
                )
                signal = run.measured_wrk(wrk, f"{base}/rx/bench:bench/contact_id",
                                          args.connections, args.duration, token, body,
                                          server.pid, db)  # fmt: skip
                rate = signal["durable_rate"]
                cpu = run.cpu_us(signal, "rows") / run.cpu_us(trivial, "requests")
                results[checkout].append((rate, rate / trivial["rate"], cpu))
                print(
                    f"{checkout.name:>20}: trivial {trivial['rate']:7.0f} req/s | contact_id "
                    f"{rate:7.0f} durable signals/s (p99 {signal['p99_ms']:.1f} ms, non-2xx "
                    f"{signal['non_2xx']}) | ratio {rate / trivial['rate']:.1%} | CPU a signal "
                    f"{run.cpu_us(signal, 'rows'):.0f} µs, {cpu:.2f}x a trivial request's",
                    flush=True,
                )
    finally:
        for _, data_dir, _, _, server in nodes:
            server.terminate()
            server.wait(timeout=60)
            shutil.rmtree(data_dir, ignore_errors=True)
    for checkout, figures in results.items():
        rate = statistics.median(r for r, _, _ in figures)
        ratio = statistics.median(x for _, x, _ in figures)
        cpu = statistics.median(c for _, _, c in figures)
        print(f"{checkout}: median {rate:.0f} durable signals/s, ratio {ratio:.1%}, "
              f"CPU a durable signal {cpu:.2f}x a trivial request's")  # fmt: skip


if __name__ == "__main__":
    main()
