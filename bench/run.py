"""Load benchmark of the signaling interface: wrk against ``contact_id`` and a trivial handler.

Starts a fresh node (bench/server.py) on a free port with a new SQLite data directory, then runs
wrk in alternating rounds against ``POST /rx/bench:bench/contact_id`` (every request validated and
durably committed before its answer) and ``POST /bench/trivial`` (the same requests answered with
the same bytes, doing nothing). Durable signals/s counts the rows in the database, not answers.

Mixes (bench/mix.py): ``realistic`` sends a station's mix (openings and closings, tests,
troubles and restorals, alarms, a few unknown accounts) from ``--accounts`` accounts provisioned
by CSV import before the clock starts; ``unknown`` sends the earlier worst case, every signal an
``UNKNOWN ACCOUNT`` alarm (contact_id.lua's own bodies). Each round runs the trivial handler,
then each mix. CPU: user plus system time of the node and its children (the writer process)
from /proc, from the start of a wrk run until the node is idle again (routing after the answers
included), divided by the durable signals (or trivial requests) of the run.

``--storm`` finds instead the highest open-loop rate of the realistic mix whose p99 (planned send
to ``200``, the signal committed) stays under 250 ms for ``--storm-seconds``: doubling, then
bisection, probing ``--storm-probe-seconds`` a rate, then the rate found held for the full time.

    python bench/run.py [--mix realistic,unknown] [--duration 10] [--connections 64] [--rounds 5]
    python bench/run.py --storm [--storm-seconds 60] [--storm-probe-seconds 10]
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
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
from typing import Any

import mix
from pending_latency import (
    Share,
    cpu_seconds,
    gather,
    load_process,
    node_cpu_seconds,
    percentile,
)

HERE = Path(__file__).resolve().parent
TARGET_RATE = 6000
TARGET_P99_MS = 50
TARGET_RATIO = 0.60
TARGET_CPU_RATIO = 1.8  # CPU a durable signal (realistic mix) against a trivial request
STORM_P99_MS = 250.0
BODIES = 300_000  # realistic bodies in the file wrk cycles through: more than a round sends
RUNAWAY_LIMIT = 1_000_000  # a benchmark account sends far more often than a real one


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


def wrk(
    binary: str, url: str, connections: int, duration: int, token: str, bodies: Path | None = None
) -> dict[str, float]:
    env = {**os.environ, "ALARMHUB_TOKEN": token, "ALARMHUB_BODIES": str(bodies or "")}
    out = subprocess.run(
        wrk_command(binary, url, connections, duration),
        check=True, capture_output=True, text=True, env=env,
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


def provision(checkout: Path, accounts: int = 0) -> tuple[Path, dict[str, str], dict[str, Any]]:
    """A new SQLite data directory provisioned by ``checkout``'s CLI with the ``bench`` driver
    and token and, with ``accounts``, the realistic mix's dnis, line mask and that many accounts
    (CSV import): (data directory, the environment of its node, the token)."""
    data_dir = Path(tempfile.mkdtemp(prefix="alarmhub-bench-"))
    env = {**os.environ, "PYTHONPATH": str(checkout / "src")}

    def cli(*args: str) -> str:
        return subprocess.run(
            [sys.executable, "-m", "alarmhub", *args, "--data-dir", str(data_dir)],
            env=env, check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip

    cli("driver", "add", "bench")
    token = json.loads(cli("token", "create", "--name", "bench", "--driver", "bench", "--json"))
    if accounts:
        cli("dnis", "add", mix.DNIS, "--mask", mix.MASK)
        mix.write_accounts_csv(data_dir / "accounts.csv", accounts)
        added = json.loads(cli("account", "import", str(data_dir / "accounts.csv"), "--json"))
        if added["added"] != accounts:
            sys.exit(f"account import added {added['added']} of {accounts}")
        env["ALARMHUB_RUNAWAY_LIMIT"] = str(RUNAWAY_LIMIT)
    return data_dir, env, token


def start_node(checkout: Path, accounts: int = 0) -> tuple[Path, str, int, subprocess.Popen[str]]:
    """A node of ``checkout`` (its ``src`` first on the path) on a new SQLite data directory,
    with the ``bench`` driver and token: (data directory, token, port, process). With
    ``accounts``, the realistic mix's dnis and line mask and that many accounts (CSV import),
    and a runaway limit no benchmark account reaches."""
    data_dir, env, token = provision(checkout, accounts)
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


def settle(pid: int, timeout: float = 30.0) -> float:
    """Wait until the node and its children are idle (under 3 % of a core over 200 ms, the
    writer's routing after the answers done); their CPU seconds then."""
    deadline = time.monotonic() + timeout
    last = node_cpu_seconds(pid)
    while time.monotonic() < deadline:
        time.sleep(0.2)
        now = node_cpu_seconds(pid)
        if now - last < 0.006:
            return now
        last = now
    return last


def measured_wrk(
    binary: str, url: str, connections: int, duration: int, token: str, bodies: Path | None,
    pid: int, db: Path,
) -> dict[str, float]:  # fmt: skip
    """One wrk run with the node's CPU (until idle again; ``node_cpu_s`` the node process's
    own, the rest its children's: the writer) and the rows it stored."""
    before, cpu0, own0 = stored(db), node_cpu_seconds(pid), cpu_seconds(pid)
    result = wrk(binary, url, connections, duration, token, bodies)
    result["cpu_s"] = settle(pid) - cpu0
    result["node_cpu_s"] = cpu_seconds(pid) - own0
    result["rows"] = stored(db) - before
    result["durable_rate"] = result["rows"] / result["seconds"]
    return result


def write_bodies(path: Path, accounts: int) -> None:
    signals = mix.realistic(BODIES, accounts)
    path.write_bytes(b"\n".join(mix.contact_id_body(s) for s in signals) + b"\n")
    shares = ", ".join(f"{k} {v:.1f} %" for k, v in mix.shares(signals).items())
    print(f"realistic mix: {BODIES:,} bodies ({shares}), {accounts:,} accounts", flush=True)


def rounds_main(args: argparse.Namespace, binary: str) -> None:
    mixes = args.mix
    accounts = args.accounts if "realistic" in mixes else 0
    started = time.monotonic()
    data_dir, token, port, server = start_node(HERE.parent, accounts)
    db = data_dir / "alarmhub.db"
    bodies = {"realistic": data_dir / "bodies.txt", "unknown": None}
    if accounts:
        write_bodies(data_dir / "bodies.txt", accounts)
    trivial_bodies = bodies["realistic"] if accounts else None
    print(f"provisioned and started in {time.monotonic() - started:.1f} s; "
          f"load average {os.getloadavg()[0]:.2f}", flush=True)  # fmt: skip
    rounds: list[dict[str, Any]] = []
    try:
        base = f"http://127.0.0.1:{port}"
        wrk(binary, f"{base}/bench/trivial", args.connections, 2, token, trivial_bodies)  # warm-up
        for number in range(1, args.rounds + 1):
            runs: dict[str, Any] = {}
            runs["trivial"] = measured_wrk(
                binary, f"{base}/bench/trivial", args.connections, args.duration, token,
                trivial_bodies, server.pid, db,
            )  # fmt: skip
            for name in mixes if number % 2 else mixes[::-1]:
                runs[name] = measured_wrk(
                    binary, f"{base}/rx/bench:bench/contact_id", args.connections, args.duration,
                    token, bodies[name], server.pid, db,
                )  # fmt: skip
            rounds.append(runs)
            show_round(number, runs, mixes)
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            paths = conn.execute("SELECT path, count(*) FROM alarm GROUP BY path").fetchall()
        print(f"alarms by path: {dict(paths)}", flush=True)
    finally:
        server.terminate()
        server.wait(timeout=60)
        shutil.rmtree(data_dir, ignore_errors=True)
    summary = summarize(rounds, mixes)
    show_summary(summary, args.connections)
    if args.json:
        args.json.write_text(json.dumps({"cores": os.cpu_count(), "rounds": rounds,
                                         "summary": summary}, indent=2))  # fmt: skip


def cpu_us(run: dict[str, float], per: str) -> float:
    return 1e6 * run["cpu_s"] / max(1, run[per])


def node_us(run: dict[str, float], per: str) -> float:
    return 1e6 * run["node_cpu_s"] / max(1, run[per])


def show_round(number: int, runs: dict[str, Any], mixes: list[str]) -> None:
    trivial = runs["trivial"]
    line = (
        f"round {number}: trivial {trivial['rate']:7.0f} req/s (p99 {trivial['p99_ms']:.1f} ms, "
        f"{cpu_us(trivial, 'requests'):.0f} µs CPU)"
    )
    for name in mixes:
        run = runs[name]
        line += (
            f" | {name} {run['durable_rate']:7.0f} durable/s (p50 {run['p50_ms']:.1f} ms, "
            f"p99 {run['p99_ms']:.1f} ms, non-2xx {run['non_2xx']}, "
            f"{cpu_us(run, 'rows'):.0f} µs CPU: node {node_us(run, 'rows'):.0f}, "
            f"{cpu_us(run, 'rows') / cpu_us(trivial, 'requests'):.2f}x)"
        )
    print(line, flush=True)


def summarize(rounds: list[dict[str, Any]], mixes: list[str]) -> dict[str, Any]:
    """Medians over the rounds, per mix; ratios are taken within a round, then the median."""
    trivial_cpu = [cpu_us(r["trivial"], "requests") for r in rounds]
    out: dict[str, Any] = {
        "trivial": {
            "rate": statistics.median(r["trivial"]["rate"] for r in rounds),
            "cpu_us": statistics.median(trivial_cpu),
            "node_cpu_us": statistics.median(node_us(r["trivial"], "requests") for r in rounds),
        }
    }
    for name in mixes:
        runs = [r[name] for r in rounds]
        out[name] = {
            "durable_rate": statistics.median(x["durable_rate"] for x in runs),
            "p50_ms": statistics.median(x["p50_ms"] for x in runs),
            "p99_ms": statistics.median(x["p99_ms"] for x in runs),
            "ratio": statistics.median(
                x["durable_rate"] / r["trivial"]["rate"] for x, r in zip(runs, rounds, strict=True)
            ),
            "cpu_us": statistics.median(cpu_us(x, "rows") for x in runs),
            "node_cpu_us": statistics.median(node_us(x, "rows") for x in runs),
            "cpu_ratio": statistics.median(
                cpu_us(x, "rows") / t for x, t in zip(runs, trivial_cpu, strict=True)
            ),
            "non_2xx": sum(x["non_2xx"] for x in runs),
            "socket_errors": sum(x["socket_errors"] for x in runs),
        }
    return out


def show_summary(summary: dict[str, Any], connections: int) -> None:
    def verdict(ok: bool) -> str:
        return "met" if ok else "NOT met"

    trivial = summary["trivial"]
    print(
        f"\nmedians, {connections} connections, {os.cpu_count()} cores: trivial handler "
        f"{trivial['rate']:.0f} req/s, {trivial['cpu_us']:.0f} µs CPU a request (node and writer)"
    )
    for name, s in summary.items():
        if name == "trivial":
            continue
        cpu_target = ""
        if name == "realistic":
            met = verdict(s["cpu_ratio"] <= TARGET_CPU_RATIO)
            cpu_target = f"   target <= {TARGET_CPU_RATIO}x: {met}"
        print(
            f"  {name}:\n"
            f"    durable signals/s   {s['durable_rate']:8.0f}   target >= {TARGET_RATE}: "
            f"{verdict(s['durable_rate'] >= TARGET_RATE)}\n"
            f"    p50 / p99 (ms)      {s['p50_ms']:8.1f} / {s['p99_ms']:.1f}   target p99 < "
            f"{TARGET_P99_MS}: {verdict(s['p99_ms'] < TARGET_P99_MS)}\n"
            f"    ratio to trivial    {s['ratio']:8.1%}   target >= {TARGET_RATIO:.0%}: "
            f"{verdict(s['ratio'] >= TARGET_RATIO)}\n"
            f"    CPU a signal        {s['cpu_us']:8.0f} µs = {s['cpu_ratio']:.2f}x a trivial "
            f"request's{cpu_target}\n"
            f"      of which node     {s['node_cpu_us']:8.0f} µs, writer process "
            f"{s['cpu_us'] - s['node_cpu_us']:.0f} µs\n"
            f"    failed requests     non-2xx {s['non_2xx']}, socket errors {s['socket_errors']}"
        )


# storm capacity ----------------------------------------------------------------------------


def storm_step(
    port: int, token: str, accounts: int, rate: int, seconds: float, warmup: float, first: int
) -> dict[str, Any]:
    """Open loop at ``rate`` (bench/pending_latency.py's load processes, realistic mix) for
    ``warmup`` plus ``seconds``; latency is planned send to ``200``, unanswered counts as never."""
    ctx = mp.get_context("spawn")
    processes = max(1, math.ceil(rate / 3000))
    connections = max(1, 256 // processes)
    count, warm = int(rate * (warmup + seconds)), int(rate * warmup)
    t0 = time.monotonic() + 3.0  # processes started, the mix drawn, connections open
    deadline = t0 + warmup + seconds + 15.0
    out: Any = ctx.Queue()
    procs = []
    for worker in range(processes):
        share = Share("127.0.0.1", port, token, accounts, first, count, float(rate), t0, worker,
                      processes, connections, warm, deadline, "realistic")  # fmt: skip
        proc = ctx.Process(target=load_process, args=(share, out))
        proc.start()
        procs.append(proc)
    outcomes = gather(procs, out, deadline + 60)
    answers = [r for o in outcomes for r in o["results"] if r[0] - first >= warm]
    planned = count - warm
    ok = sorted((answered - (t0 + (i - first) / rate)) * 1000
                for i, status, _, answered in answers if status == 200)  # fmt: skip
    latencies = ok + [math.inf] * (planned - len(ok))
    sent = sorted(r[2] for r in answers)
    achieved = (len(sent) - 1) / (sent[-1] - sent[0]) if len(sent) > 1 else 0.0
    return {
        "rate": rate, "seconds": seconds, "planned": planned, "ok": len(ok),
        "failed": planned - len(ok), "achieved": achieved,
        "p50_ms": percentile(latencies, 0.50), "p99_ms": percentile(latencies, 0.99),
        "max_ms": latencies[-1] if latencies else math.inf,
        "load_cpu": sum(o["cpu"] for o in outcomes),
        "passed": percentile(latencies, 0.99) < STORM_P99_MS and len(ok) == planned,
    }  # fmt: skip


def storm_main(args: argparse.Namespace) -> None:
    started = time.monotonic()
    load = os.getloadavg()
    data_dir, token, port, server = start_node(HERE.parent, args.accounts)
    probe = min(args.storm_probe_seconds, args.storm_seconds)
    print(f"storm search: realistic mix from {args.accounts:,} accounts, p99 < "
          f"{STORM_P99_MS:g} ms for {args.storm_seconds:g} s (probes of {probe:g} s); load "
          f"average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", flush=True)  # fmt: skip
    steps: list[dict[str, Any]] = []
    first = 0

    def step(rate: int, seconds: float) -> bool:
        nonlocal first
        settle(server.pid, timeout=120)  # what a step before left queued is done
        result = storm_step(port, token, args.accounts, rate, seconds, 3.0, first)
        first += int(rate * (seconds + 3.0))
        steps.append(result)
        print(
            f"  {rate:6,}/s for {seconds:g} s: p50 {result['p50_ms']:.1f} ms, p99 "
            f"{result['p99_ms']:.1f} ms, max {result['max_ms']:.1f} ms, achieved "
            f"{result['achieved']:,.0f}/s, failed or unanswered {result['failed']:,}, load "
            f"processes {100 * result['load_cpu']:.0f} % of a core -> "
            f"{'held' if result['passed'] else 'NOT held'}",
            flush=True,
        )
        return bool(result["passed"])

    good, bad = 0, 0
    try:
        rate = args.storm_start
        while rate >= 100 and not good:  # the start rate may be too high already
            if step(rate, probe):
                good = rate
            else:
                bad, rate = rate, rate // 2
        rate = good * 2
        while good and not bad:
            if step(rate, probe):
                good, rate = rate, rate * 2
            else:
                bad = rate
        while good and bad - good > max(50, good // 20):
            rate = (good + bad) // 2 // 50 * 50
            if step(rate, probe):
                good = rate
            else:
                bad = rate
        capacity = good if probe >= args.storm_seconds else 0
        for _ in range(3 if probe < args.storm_seconds and good else 0):
            if step(good, args.storm_seconds):
                capacity = good
                break
            good = good * 9 // 10 // 50 * 50
    finally:
        server.terminate()
        server.wait(timeout=60)
        shutil.rmtree(data_dir, ignore_errors=True)
    held = [s for s in steps if s["passed"] and s["rate"] == capacity
            and s["seconds"] >= args.storm_seconds]  # fmt: skip
    if capacity and held:
        s = held[-1]
        print(f"\nstorm capacity: {capacity:,} signals/s held p99 < {STORM_P99_MS:g} ms for "
              f"{args.storm_seconds:g} s (p50 {s['p50_ms']:.1f} ms, p99 {s['p99_ms']:.1f} ms, "
              f"max {s['max_ms']:.1f} ms); run {time.monotonic() - started:.0f} s")  # fmt: skip
    else:
        print(f"\nstorm capacity: no rate held p99 < {STORM_P99_MS:g} ms for "
              f"{args.storm_seconds:g} s")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps({"capacity": capacity, "steps": steps}, indent=2))


def parse_mixes(text: str) -> list[str]:
    names = [x.strip() for x in text.split(",") if x.strip()]
    if not names or any(n not in mix.MIXES for n in names) or len(set(names)) < len(names):
        raise argparse.ArgumentTypeError(f"mixes are some of {', '.join(mix.MIXES)}")
    return names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mix", type=parse_mixes, default=list(mix.MIXES),
                        help="realistic, unknown or both (comma-separated)")  # fmt: skip
    parser.add_argument("--accounts", type=int, default=mix.ACCOUNTS, help="provisioned")
    parser.add_argument("--duration", type=int, default=10, help="seconds per wrk run")
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--storm", action="store_true", help="search the storm capacity instead")
    parser.add_argument("--storm-seconds", type=float, default=60.0,
                        help="how long the rate found must hold p99 < 250 ms")  # fmt: skip
    parser.add_argument("--storm-probe-seconds", type=float, default=10.0,
                        help="measured seconds of each rate tried in the search")  # fmt: skip
    parser.add_argument("--storm-start", type=int, default=1000, help="first rate tried")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args()
    if args.storm:
        storm_main(args)
    else:
        rounds_main(args, ensure_wrk())


if __name__ == "__main__":
    main()
