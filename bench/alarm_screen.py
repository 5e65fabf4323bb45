#!/usr/bin/env python3
"""Alarm screen: how long the console takes to answer the request that opens an alarm, with a
whole station's response data loaded.

What is measured: the wall time of ``GET /console/api/alarms/{id}``, the one request the console
makes when an operator opens an alarm (the alarm, its account, its events, the account's recent
history, its response data: the call list of the alarm's type with the calls made to each
contact, the zone, the agencies and permit; and its action plan with where its steps stand),
timed by an HTTP client on the same machine with a signed-in operator's session. Each of
``--alarms`` alarms (burglaries of random accounts, each on a zone the account has) is opened
``--opens`` times, in a shuffled order; a call is logged on half of them first, so the screen
also reads calls.

Setting: a fresh temporary data directory (SQLite) provisioned with the real CLI; the example
data set (``alarmhub.example_data``: 3 contacts on call lists and about 8 zones an account) of
``--accounts`` accounts loaded as the demo loads it (``import_csv``); the node is ``alarmhub
serve`` in a process of its own; this script and the node share the machine. Target: p99 under
100 ms.

    .venv/bin/python bench/alarm_screen.py [--accounts 100000] [--alarms 200] [--opens 5]
"""

from __future__ import annotations

import argparse
import html
import json
import random
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from alarmhub import demo, example_data
from alarmhub.store import operators
from alarmhub.store.engine import open_engine
from console_latency import (
    DRIVER,
    OPERATOR,
    PASSWORD,
    SOURCE,
    alarmhub,
    free_port,
    percentile,
    start_node,
    stop_node,
)

TARGET_P99_MS = 100.0
DNIS = "4321"
MASK = "7"  # a prefix: panel 00042 is account 700042, panel 0010000 is 70010000


def provision(data_dir: Path, accounts: int) -> tuple[str, list[str]]:
    """Driver, token, dnis, the example data set, an operator; the token and the accounts."""
    alarmhub(data_dir, "driver", "add", DRIVER)
    token = json.loads(
        alarmhub(data_dir, "token", "create", "--name", "bench", "--driver", DRIVER, "--json")
    )["token"]
    alarmhub(data_dir, "dnis", "add", DNIS, "--mask", MASK)
    engine = open_engine(f"sqlite:///{data_dir / 'alarmhub.db'}")
    try:
        started = time.perf_counter()
        for kind, done in demo.load_examples(engine, accounts).items():
            if done["refused"]:
                raise SystemExit(f"{kind}: {done['refused']} rows refused")
        print(f"imported {accounts:,} accounts in {time.perf_counter() - started:.1f} s")
        operators.add_operator(engine, OPERATOR, "Bench Operator", "operator", PASSWORD)
    finally:
        engine.dispose()
    numbers = [example_data.account_number(i) for i in range(1, accounts + 1)]
    return str(token), numbers


def sign_in(client: httpx.Client) -> str:
    """Sign the operator in through the form; the page's CSRF token."""
    page = client.get("/console/login").text
    form_token = html.unescape(re.search(r'name="csrf" value="([^"]+)"', page).group(1))  # type: ignore[union-attr]
    answer = client.post(
        "/console/login", data={"csrf": form_token, "code": OPERATOR, "password": PASSWORD}
    )
    if answer.status_code != 303:
        raise SystemExit(f"sign-in refused: {answer.status_code} {answer.text[:200]}")
    page = client.get("/console").text
    return html.unescape(re.search(r'name="csrf-token" content="([^"]+)"', page).group(1))  # type: ignore[union-attr]


def run(args: argparse.Namespace, data_dir: Path) -> dict[str, Any]:
    token, numbers = provision(data_dir, args.accounts)
    port = free_port()
    node = start_node(data_dir, port, data_dir / "node.log")
    rng = random.Random(7)
    try:
        url = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=url, timeout=30, follow_redirects=False) as client:
            csrf = sign_in(client)
            headers = {"X-CSRF-Token": csrf, "Content-Type": "application/json"}
            client.post("/console/api/receiving", json={"receiving": False}, headers=headers)
            chosen = rng.sample(numbers, args.alarms)
            for number in chosen:
                body = {"dnis": DNIS, "panel": number[1:], "code": "E130", "zone_or_user": "1"}
                answer = client.post(
                    f"/rx/{SOURCE}:{DRIVER}/contact_id",
                    json=body,
                    headers={"Authorization": f"Bearer {token}"},
                )
                if answer.status_code != 200:
                    raise SystemExit(f"signal refused: {answer.status_code} {answer.text}")
            deadline = time.monotonic() + 60
            alarms: list[int] = []
            while time.monotonic() < deadline:
                snapshot = client.get("/console/api/snapshot").json()["snapshot"]
                column = snapshot["fields"].index("alarm_id")
                alarms = [row[column] for row in snapshot["pending"]]
                if len(alarms) >= args.alarms:
                    break
                time.sleep(0.2)
            if len(alarms) < args.alarms:
                raise SystemExit(f"only {len(alarms)} of {args.alarms} alarms became pending")
            for alarm_id in alarms[::2]:  # calls on half of them: the screen reads them too
                client.post(f"/console/api/alarms/{alarm_id}/take", json={}, headers=headers)
                detail = client.get(f"/console/api/alarms/{alarm_id}").json()
                contacts = detail["response"]["call_list"]["contacts"]
                if contacts:
                    call = {"contact_id": contacts[0]["id"], "outcome": "no-answer"}
                    client.post(f"/console/api/alarms/{alarm_id}/call", json=call, headers=headers)
                client.post(
                    f"/console/api/alarms/{alarm_id}/resolve",
                    json={"resolution": "FA"},
                    headers=headers,
                )
            opens = [a for a in alarms for _ in range(args.opens)]
            rng.shuffle(opens)
            times_ms: list[float] = []
            with_list = 0
            for alarm_id in opens:
                started = time.perf_counter()
                answer = client.get(f"/console/api/alarms/{alarm_id}")
                elapsed = (time.perf_counter() - started) * 1000
                if answer.status_code != 200:
                    raise SystemExit(f"alarm {alarm_id}: {answer.status_code} {answer.text}")
                times_ms.append(elapsed)
                with_list += bool(answer.json()["response"]["call_list"]["contacts"])
    finally:
        stop_node(node)
    times_ms.sort()
    return {
        "accounts": args.accounts,
        "alarms": len(alarms),
        "opens": len(times_ms),
        "opens_with_a_call_list": with_list,
        "p50_ms": round(percentile(times_ms, 0.50), 1),
        "p90_ms": round(percentile(times_ms, 0.90), 1),
        "p99_ms": round(percentile(times_ms, 0.99), 1),
        "max_ms": round(times_ms[-1], 1),
        "target_p99_ms": TARGET_P99_MS,
        "met": percentile(times_ms, 0.99) < TARGET_P99_MS,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--accounts", type=int, default=100_000)
    parser.add_argument("--alarms", type=int, default=200)
    parser.add_argument("--opens", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="keep the data directory")
    args = parser.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="alarmhub-screen-"))
    try:
        print(json.dumps(run(args, data_dir), indent=2))
    finally:
        if args.keep:
            print(f"data directory kept: {data_dir}", file=sys.stderr)
        else:
            shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
