"""Durable signals per second: one node on SQLite, one node on PostgreSQL, two nodes on one
PostgreSQL database, in one run.

Each set-up is a fresh database (SQLite: a new data directory; PostgreSQL: a new database on the
server at ``--postgres``) with its nodes (``alarmhub serve``) already running. Rounds alternate
between the set-ups; in a round wrk (bench/contact_id.lua: every request a unique signal) sends
for ``--duration`` seconds with ``--connections`` connections in all, split evenly over the
set-up's nodes (one wrk per node, run together). Durable signals/s counts the rows that reached
the database during the round, not the answers.

    python bench/nodes.py [--postgres postgresql://postgres@127.0.0.1:5432/postgres]
                          [--duration 10] [--connections 64] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from sqlalchemy import text

from alarmhub.store.engine import open_engine

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import ensure_wrk, free_port, wrk_command, wrk_summary


@dataclass
class Setup:
    """A database and the nodes that serve it."""

    name: str
    url: str
    data_dir: Path
    nodes: int
    token: str = ""
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    ports: list[int] = field(default_factory=list)
    results: list[dict[str, float]] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "ALARMHUB_DATABASE_URL": self.url}

    def alarmhub(self, *args: str) -> str:
        return subprocess.run(
            [sys.executable, "-m", "alarmhub", *args, "--data-dir", str(self.data_dir)],
            check=True, capture_output=True, text=True, env=self.env,
        ).stdout  # fmt: skip

    def start(self) -> None:
        self.alarmhub("driver", "add", "bench")
        created = self.alarmhub("token", "create", "--name", "bench", "--driver", "bench", "--json")
        self.token = json.loads(created)["token"]
        for _ in range(self.nodes):
            port = free_port()
            log = (self.data_dir / f"node-{port}.log").open("wb")
            self.processes.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "alarmhub",
                        "serve",
                        "--listen",
                        f"127.0.0.1:{port}",
                        "--data-dir",
                        str(self.data_dir),
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=self.env,
                )
            )
            self.ports.append(port)
        for port in self.ports:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    sys.exit(f"{self.name}: a node did not start")
                time.sleep(0.1)

    def stored(self) -> int:
        engine = open_engine(self.url)
        try:
            with engine.connect() as conn:
                return int(conn.execute(text("SELECT count(*) FROM signal")).scalar_one())
        finally:
            engine.dispose()

    def round(self, binary: str, connections: int, duration: int) -> dict[str, float]:
        before = self.stored()
        runs = [
            subprocess.Popen(
                wrk_command(
                    binary,
                    f"http://127.0.0.1:{port}/rx/bench:bench/contact_id",
                    connections // self.nodes,
                    duration,
                ),
                stdout=subprocess.PIPE,
                text=True,
                env={**os.environ, "ALARMHUB_TOKEN": self.token, "ALARMHUB_PANEL_PREFIX": f"N{i}"},
            )
            for i, port in enumerate(self.ports)
        ]
        outs = [run.communicate()[0] for run in runs]
        summaries = [wrk_summary(out) for out in outs]
        time.sleep(0.5)
        seconds = max(s["seconds"] for s in summaries)
        result = {
            "durable_rate": (self.stored() - before) / seconds,
            "p50_ms": max(s["p50_ms"] for s in summaries),
            "p99_ms": max(s["p99_ms"] for s in summaries),
            "non_2xx": sum(s["non_2xx"] for s in summaries),
        }
        self.results.append(result)
        return result

    def stop(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            process.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--postgres",
        default=os.environ.get(
            "ALARMHUB_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
        ),
        help="a PostgreSQL server URL (a database is created on it and dropped after)",
    )
    parser.add_argument("--duration", type=int, default=10, help="seconds per round")
    parser.add_argument("--connections", type=int, default=64, help="in all, over the nodes")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args()
    binary = ensure_wrk()

    admin = open_engine(args.postgres).execution_options(isolation_level="AUTOCOMMIT")
    base = args.postgres.rsplit("/", 1)[0]
    databases = [f"ah_bench_{uuid.uuid4().hex[:8]}" for _ in range(2)]
    with admin.connect() as conn:
        for name in databases:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    root = Path(tempfile.mkdtemp(prefix="alarmhub-nodes-"))
    setups = [
        Setup("SQLite, 1 node", f"sqlite:///{root / 'sqlite' / 'alarmhub.db'}", root / "sqlite", 1),
        Setup("PostgreSQL, 1 node", f"{base}/{databases[0]}", root / "pg1", 1),
        Setup("PostgreSQL, 2 nodes", f"{base}/{databases[1]}", root / "pg2", 2),
    ]
    try:
        for setup in setups:
            setup.data_dir.mkdir(parents=True)
            setup.start()
        for number in range(1, args.rounds + 1):
            for setup in setups:
                r = setup.round(binary, args.connections, args.duration)
                print(
                    f"round {number} {setup.name:20} {r['durable_rate']:7.0f} durable signals/s"
                    f" (p50 {r['p50_ms']:.1f} ms, p99 {r['p99_ms']:.1f} ms,"
                    f" non-2xx {r['non_2xx']:.0f})",
                    flush=True,
                )
    finally:
        for setup in setups:
            setup.stop()
        with admin.connect() as conn:
            for name in databases:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
        shutil.rmtree(root, ignore_errors=True)

    cores = os.cpu_count()
    print(f"\nmedian of {args.rounds} rounds, {args.connections} connections, {cores} cores:")
    for setup in setups:
        rate = statistics.median(r["durable_rate"] for r in setup.results)
        p99 = statistics.median(r["p99_ms"] for r in setup.results)
        print(f"  {setup.name:20} {rate:7.0f} durable signals/s, p99 {p99:.1f} ms")
    if args.json:
        results = {s.name: s.results for s in setups}
        args.json.write_text(json.dumps({"cores": cores, "setups": results}, indent=2))


if __name__ == "__main__":
    main()
