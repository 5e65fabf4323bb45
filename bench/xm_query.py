#!/usr/bin/env python3
"""Query interface latency through HTTP with authentication, 50 concurrent clients.

- XMHIST of one account (random among 100,000, a one-day window, LIMITHIST=100) in a history of
  ``--events`` events (default 10 million); target p99 under 20 ms.
- XMAPEND answering 1,000 pending alarms; target p99 under 100 ms.

Every request is signed (sha1 digest, a fresh nonce: the server records each nonce in the
database before it answers). The history is bulk-loaded as ``bench/history_query.py`` does
(its builder is reused); the 1,000 pending alarms are real: 1,000 signals posted to
``contact_id`` for 1,000 provisioned accounts and routed by the node. The paced client is one
process (asyncio on uvloop, a plain HTTP/1.1 client on a keep-alive connection per worker) with
50 workers, each sending one request a second on a fixed schedule; each request is signed and
encoded before its time, and latency counts from the scheduled time to the last byte of the
answer, so a late send and the client's reading are included. (An httpx client added about
2.5 ms of its own to every request, more than the server's part of a typical one.)

    .venv/bin/python bench/xm_query.py [--events 10000000] [--seconds 15] [--clients 50]
    .venv/bin/python bench/xm_query.py --events 200000 --seconds 5      # a quick try first
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import uvloop

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import history_query  # noqa: E402  (the history builder of the other benchmark)
from alarmhub.xm import digest  # noqa: E402

TARGETS_MS = {"XMHIST": 20.0, "XMAPEND": 100.0}
PENDING = 1000
USER, PASSWORD = "bench", "bench-password-1"
DAY_US = 86_400 * 1_000_000


def alarmhub(data_dir: Path, *args: str) -> str:
    return subprocess.run(
        [sys.executable, "-m", "alarmhub", *args, "--data-dir", str(data_dir)],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def signed(form: dict[str, str]) -> dict[str, str]:
    date = digest.date_header()
    nonce = secrets.token_hex(10)
    return {
        "X-SVC-APPKEY": "bench",
        "X-SVC-USERNAME": USER,
        "X-SVC-DATE": date,
        "X-SVC-NONCE": nonce,
        "X-SVC-DIGEST": digest.sha1_digest("bench", USER, date, nonce, PASSWORD),
    }


async def load(
    url: str, clients: int, seconds: float, make_form: Any, interval: float = 0.0
) -> tuple[list[float], dict[int, int]]:
    """``clients`` workers for ``seconds``, each on its own keep-alive connection. With
    ``interval`` > 0 each worker sends one request every ``interval`` seconds on a fixed
    schedule; the request is signed and encoded before its time, and latency counts from the
    scheduled time to the last byte of the answer (a late send is not hidden); with 0 each
    sends its next request as soon as it has an answer (saturation), and latency also counts
    the signing and encoding."""
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    stop_at = time.monotonic() + seconds
    address = httpx.URL(url)
    host, port = address.host, address.port or 80

    async def worker(number: int) -> None:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            due = time.perf_counter() + interval * number / clients
            while time.monotonic() < stop_at:
                if not interval:
                    due = time.perf_counter()
                request = http_request(host, make_form())
                while interval and (delay := due - time.perf_counter()) > 0:
                    await asyncio.sleep(delay)
                writer.write(request)
                async with asyncio.timeout(30):
                    status, keep_alive = await read_answer(reader)
                latencies.append((time.perf_counter() - due) * 1000)
                statuses[status] = statuses.get(status, 0) + 1
                due += interval
                if not keep_alive:
                    writer.close()
                    reader, writer = await asyncio.open_connection(host, port)
        finally:
            writer.close()

    await asyncio.gather(*(worker(n) for n in range(clients)))
    return latencies, statuses


def http_request(host: str, form: dict[str, str]) -> bytes:
    """The whole HTTP/1.1 request of one signed query: multipart form, five headers."""
    body = multipart(form).encode()
    head = "".join(f"{name}: {value}\r\n" for name, value in signed(form).items())
    return (
        f"POST {PATH} HTTP/1.1\r\nHost: {host}\r\n{head}"
        f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


async def read_answer(reader: asyncio.StreamReader) -> tuple[int, bool]:
    """Read one whole answer (status line, headers, a body of Content-Length bytes): its
    status, and whether the connection stays open."""
    lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if "content-length" not in headers:
        raise RuntimeError(f"an answer without Content-Length: {lines}")
    await reader.readexactly(int(headers["content-length"]))
    return status, headers.get("connection", "").lower() != "close"


BOUNDARY = "alarmhubbench7MA4YWxkTrZu0gW"
PATH = "/rest/rest.php?dataSource=methods&*view=xmsubmit"


def multipart(form: dict[str, str]) -> str:
    parts = [
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'
        for name, value in form.items()
    ]
    return "".join(parts) + f"--{BOUNDARY}--\r\n"


def saturate(
    url: str, clients: int, seconds: float, make_form: Any, requests: int
) -> dict[str, Any]:
    """wrk (C, one thread) replays ``requests`` pre-signed requests with ``clients``
    connections, each sending its next request as soon as it has an answer."""
    wrk = shutil.which("wrk")
    if wrk is None:
        return {"skipped": "wrk is not installed (bench/run.py installs it)"}
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as fh:
        for _ in range(requests):
            form = make_form()
            h = signed(form)
            body = multipart(form).replace("\r\n", "\\n")
            fields = (
                h["X-SVC-APPKEY"], h["X-SVC-USERNAME"], h["X-SVC-DATE"], h["X-SVC-NONCE"],
                h["X-SVC-DIGEST"], f"multipart/form-data; boundary={BOUNDARY}", body,
            )  # fmt: skip
            fh.write("\t".join(fields) + "\n")
        path = fh.name
    try:
        out = subprocess.run(
            [wrk, "-t1", f"-c{clients}", f"-d{seconds:g}s", "-s", str(HERE / "xm_requests.lua"),
             f"{url}/rest/rest.php?dataSource=methods&*view=xmsubmit"],
            check=True, capture_output=True, text=True,
            env={**os.environ, "XM_REQUESTS": path},
        ).stdout  # fmt: skip
    finally:
        os.unlink(path)
    data = json.loads(next(x for x in out.splitlines() if x.startswith("JSON "))[5:])
    return {
        "requests": data["requests"],
        "rate": data["requests"] / (data["duration_us"] / 1e6),
        "p50_ms": data["p50_us"] / 1000,
        "p90_ms": data["p90_us"] / 1000,
        "p99_ms": data["p99_us"] / 1000,
        "max_ms": data["max_us"] / 1000,
        "non_2xx": data["errors_status"],
        "socket_errors": data["errors_connect"] + data["errors_timeout"],
    }


def summary(latencies: list[float]) -> dict[str, float]:
    ordered = sorted(latencies)
    return {
        "requests": len(ordered),
        "p50_ms": history_query.percentile(ordered, 0.50),
        "p90_ms": history_query.percentile(ordered, 0.90),
        "p99_ms": history_query.percentile(ordered, 0.99),
        "max_ms": ordered[-1],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--accounts", type=int, default=100_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=15.0, help="per method and mode")
    parser.add_argument(
        "--interval", type=float, default=1.0, help="seconds between one client's requests"
    )
    parser.add_argument(
        "--saturation-requests",
        type=int,
        default=60_000,
        help="pre-signed requests for the wrk run (each nonce is used once)",
    )
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    data_dir = Path(tempfile.mkdtemp(prefix="alarmhub-xm-bench-"))
    server = None
    try:
        history_query.alarmhub_db_upgrade(data_dir)
        stop_us = int(time.time() * 1_000_000) - DAY_US
        start_us = stop_us - args.days * DAY_US
        people = history_query.population(args.accounts, 0.01, 0.3)
        load_args = argparse.Namespace(
            events=args.events, batch=100_000, seed=20261122, incremental_index=False
        )
        steps = history_query.bulk_load(
            data_dir / "alarmhub.db", load_args, people, start_us, stop_us
        )
        print(f"history of {args.events:,} events loaded in {sum(steps.values()):.0f} s")

        alarmhub(data_dir, "driver", "add", "bench")
        alarmhub(data_dir, "dnis", "add", "9999", "--mask", "9#####")
        csv_path = data_dir / "pending-accounts.csv"
        csv_path.write_text(
            "account,name\n"
            + "".join(f"9{n:05d},Bench Pending {n}\n" for n in range(1, PENDING + 1))
        )
        alarmhub(data_dir, "account", "import", str(csv_path))
        token = json.loads(
            alarmhub(data_dir, "token", "create", "--name", "bench", "--driver", "bench", "--json")
        )["token"]
        alarmhub(data_dir, "apiuser", "add", USER, "--password", PASSWORD)

        port = free_port()
        url = f"http://127.0.0.1:{port}"
        server = subprocess.Popen(
            [sys.executable, "-m", "alarmhub", "serve", "--listen", f"127.0.0.1:{port}",
             "--data-dir", str(data_dir), "--log-level", "warning"],
            env={**os.environ, "ALARMHUB_TIMEZONE": "UTC"},
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                sys.exit("the node did not start")
            time.sleep(0.1)

        auth = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=url, headers=auth, timeout=30) as http:
            for n in range(1, PENDING + 1):
                body = {"dnis": "9999", "panel": f"{n:05d}", "code": "E130", "zone_or_user": "1"}
                http.post("/rx/site:bench/contact_id", json=body).raise_for_status()
        pending = 0
        deadline = time.monotonic() + 60
        while pending < PENDING and time.monotonic() < deadline:
            form = {"*setMethod": "XMAPEND", "SOURCE": "DATAENTRY"}
            answer = httpx.post(
                f"{url}/rest/rest.php",
                params={"dataSource": "methods", "*view": "xmsubmit"},
                files={k: (None, v) for k, v in form.items()},
                headers=signed(form),
            ).json()
            pending = int(answer["TOTAL_RECORDS"])
        print(f"{pending} alarms pending")

        rng = random.Random(7)

        def history_form() -> dict[str, str]:
            account = rng.choice(people.accounts)
            day = start_us + rng.randrange(args.days) * DAY_US
            begin = time.strftime("%Y%m%d", time.gmtime(day / 1_000_000))
            return {
                "*setMethod": "XMHIST",
                "ACCOUNT": account,
                "STARTDATE": begin,
                "STOPDATE": begin,
                "LIMITHIST": "100",
            }

        def pending_form() -> dict[str, str]:
            return {"*setMethod": "XMAPEND", "SOURCE": "DATAENTRY"}

        results: dict[str, Any] = {"events": args.events, "clients": args.clients}
        paced = f"{args.clients} clients, one request each every {args.interval:g} s"
        busy = f"{args.clients} connections, no pause (wrk)"
        for method, make in (("XMHIST", history_form), ("XMAPEND", pending_form)):
            uvloop.run(load(url, args.clients, 2.0, make, args.interval))  # warm-up
            latencies, statuses = uvloop.run(
                load(url, args.clients, args.seconds, make, args.interval)
            )
            stats: dict[str, Any] = summary(latencies)
            stats["rate"] = stats["requests"] / args.seconds
            stats["non_2xx"] = sum(n for code, n in statuses.items() if code != 200)
            results[f"{method}, {paced}"] = stats
            results[f"{method}, {busy}"] = saturate(
                url, args.clients, args.seconds, make, args.saturation_requests
            )
            target = TARGETS_MS[method]
            for mode in (paced, busy):
                s = results[f"{method}, {mode}"]
                if "skipped" in s:
                    print(f"{method}, {mode}: skipped, {s['skipped']}")
                    continue
                met = s["p99_ms"] < target and s["non_2xx"] == 0
                print(
                    f"{method}, {mode}: {s['requests']} requests ({s['rate']:.0f}/s), "
                    f"non-2xx {s['non_2xx']}, p50 {s['p50_ms']:.1f} ms, "
                    f"p90 {s['p90_ms']:.1f} ms, p99 {s['p99_ms']:.1f} ms, "
                    f"max {s['max_ms']:.1f} ms; target p99 < {target:.0f} ms: "
                    f"{'met' if met else 'NOT met'}",
                    flush=True,
                )
        print(f"{os.cpu_count()} cores, {args.clients} concurrent clients, one client process")
        if args.json:
            args.json.write_text(json.dumps(results, indent=2))
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=60)
        if args.keep:
            print(f"kept {data_dir}")
        else:
            shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
