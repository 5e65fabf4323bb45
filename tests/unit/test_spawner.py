"""The node's spawner (alarmhub.node.spawner): a child it forks is the node's own child, handed
its descriptors at their numbers and nothing else of the node's, its exit code (or the signal that
ended it) seen by the node; without a spawner, or once it died, children start by subprocess.

A node's process is single-threaded when it forks its spawner; the test process is not (and must
not become a subreaper), so each scenario runs in a process of its own (NODE below)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from alarmhub.node import spawner
from tests.support.processes import ROOT

NODE = r"""
import json, os, signal, socket, sys, time
from alarmhub import metrics
from alarmhub.node import spawner

scenario, held_path, metrics_dir = sys.argv[1:]
# a node started from a terminal: a suite started in the background (SIGINT ignored, which a new
# interpreter keeps) would otherwise hand its children SIGINT ignored by subprocess
signal.signal(signal.SIGINT, signal.default_int_handler)
held = open(held_path, "w")  # a file of the node's: no child may hold it
results = {"node": os.getpid(), "started": spawner.start(["tests.support.spawned"])}
if scenario == "spawner killed":
    os.kill(spawner._spawner.pid, signal.SIGKILL)
    time.sleep(0.2)
elif scenario == "node killed":
    print(json.dumps({"spawner": spawner._spawner.pid}), flush=True)
    time.sleep(60)

def start(code):
    ours, theirs = socket.socketpair()
    number = theirs.fileno()
    env = {**os.environ, "SPAWNED_MARK": "marked", metrics.MULTIPROCESS_DIR: metrics_dir}
    child = spawner.popen("tests.support.spawned", [str(theirs.fileno()), str(code)],
                          pass_fds=[theirs.fileno()], env=env)
    theirs.close()
    received = b""
    while not received.endswith(b"}"):
        chunk = ours.recv(65536)
        if not chunk:
            raise SystemExit(f"the child ended before it reported: {child.wait(timeout=30)}")
        received += chunk
    return child, ours, json.loads(received), number

child, ours, report, number = start(7)
results.update(kind=type(child).__name__, pid=child.pid, report=report, number=number,
               running=child.poll())
ours.close()  # the child exits with 7
results["code"] = child.wait(timeout=30)
child, ours, report, number = start(0)
child.kill()
results["killed"] = child.wait(timeout=30)
ours.close()
spawner.stop()
print(json.dumps(results), flush=True)
"""


def run_node(tmp_path: Path, scenario: str) -> tuple[dict[str, Any], str]:
    held = tmp_path / "held.txt"
    metrics_dir = tmp_path / "metrics"
    metrics_dir.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", NODE, scenario, str(held), str(metrics_dir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    results: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return results, done.stderr


def assert_started_well(results: dict[str, Any], tmp_path: Path) -> None:
    report = results["report"]
    assert report["pid"] == results["pid"] != results["node"]
    assert report["ppid"] == results["node"]  # the node's child: it waits for it
    assert report["argv"] == [str(results["number"]), "7"]
    fds = report["fds"]
    assert fds[str(results["number"])].startswith("socket:")  # at the node's number
    assert fds["0"] == os.devnull
    assert str(tmp_path / "held.txt") not in fds.values()
    assert report["mark"] == "marked"  # its environment
    assert report["sigterm"] != repr(signal.SIG_IGN)  # the spawner's own, not the child's
    assert report["sigint"] == repr(signal.default_int_handler)
    assert results["running"] is None
    assert results["code"] == 7
    assert results["killed"] == -signal.SIGKILL


def test_a_child_forked_by_the_spawner_is_the_nodes_and_its_exit_is_seen(tmp_path: Path) -> None:
    results, _ = run_node(tmp_path, "spawner")
    assert results["started"] is True
    assert results["kind"] == "Child"
    assert_started_well(results, tmp_path)
    # named for ps and top: the module's last name
    assert results["report"]["comm"] == spawner.process_name("tests.support.spawned")
    assert spawner.process_name("alarmhub.store.writer_process") == "ah-writer"
    # its metrics in multiprocess mode, in its own file, as a worker started by subprocess
    assert (tmp_path / "metrics" / f"counter_{results['pid']}.db").exists()


def test_once_the_spawner_died_children_start_by_subprocess_said_once(tmp_path: Path) -> None:
    results, log = run_node(tmp_path, "spawner killed")
    assert results["kind"] == "Popen"
    assert_started_well(results, tmp_path)
    assert log.count("child processes started by subprocess") == 1


def test_the_spawner_ends_with_a_node_killed_outright(tmp_path: Path) -> None:
    held = tmp_path / "held.txt"
    node = subprocess.Popen(
        [sys.executable, "-c", NODE, "node killed", str(held), str(tmp_path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert node.stdout is not None
        pid = json.loads(node.stdout.readline())["spawner"]
        assert running(pid)
        node.kill()
        node.wait(timeout=30)
        deadline = time.monotonic() + 10
        while running(pid):
            assert time.monotonic() < deadline, "the spawner outlived its node"
            time.sleep(0.02)
    finally:
        node.kill()
        node.wait(timeout=30)


def running(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def test_without_a_spawner_a_child_starts_by_subprocess(tmp_path: Path) -> None:
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert spawner.start(["tests.support.spawned"]) is False  # threads run already
    finally:
        stop.set()
        thread.join()
    child = spawner.popen(sys.executable, ["-c", "pass"])
    assert isinstance(child, subprocess.Popen)
    assert child.wait(timeout=30) != 0  # "python -m <the interpreter's path>": no such module
    child = spawner.popen("json.tool", ["--help"])
    assert isinstance(child, subprocess.Popen)
    assert child.wait(timeout=30) == 0
