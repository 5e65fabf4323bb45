"""SQLite on a full disk: a node's data directory on a small size-limited tmpfs, filled while
signals flow (issue 39, decisions §14).

Shown: while the disk is full the node answers ``503 STORE-1`` (every answer not 200 is one),
every signal answered 200 is in the database afterwards, ``PRAGMA integrity_check`` is ``ok``,
and the node acknowledges again by itself once the filler is removed. The figures (seconds from
the free to the first 200, acknowledged, missing, 200s while full) are printed
(docs/reliability.md). Mounting needs root (the test is skipped with the reason otherwise); the
tmpfs is always unmounted afterwards. Selected with ``-m faults`` (on SQLite, no PostgreSQL
server of its own).
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.cluster_node import Senders, provision
from tests.support.processes import Server, wait_for

pytestmark = pytest.mark.faults
SIZE = "40m"
SENDERS = 2
BEFORE = 300  # signals acknowledged before the disk is filled
REFUSED = 100  # refused while it is full, before the filler is removed
CHUNK = 1 << 20


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of :data:`SIZE` mounted on a directory of ``tmp_path``; unmounted afterwards."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True, check=False)


class Filler:
    """A file grown until the disk is full (ENOSPC), and kept growing while it is so: space the
    database frees (a WAL truncated) is taken again at once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.full = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._fill, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def free(self) -> None:
        """Stop growing and remove the filler."""
        self._stop.set()
        self._thread.join(timeout=30)
        self.path.unlink()

    def _fill(self) -> None:
        chunk = b"\0" * CHUNK
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            while not self._stop.is_set():
                try:
                    os.write(fd, chunk if not self.full.is_set() else chunk[:4096])
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    self.full.set()
                    self._stop.wait(0.01)
        finally:
            os.close(fd)


def unhealthy(node: Server) -> httpx.Response | None:
    """The node's ``/healthz`` answer when it is 503, else None."""
    answer = httpx.get(f"{node.url}/healthz", timeout=30)
    return answer if answer.status_code == 503 else None


def integrity(database: Path) -> str:
    with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as conn:
        rows = conn.execute("PRAGMA integrity_check").fetchall()
    return "; ".join(str(row[0]) for row in rows)


def stored(database: Path) -> set[str]:
    with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as conn:
        rows = conn.execute("SELECT idempotency_key FROM idempotency").fetchall()
    return {str(row[0]) for row in rows}


def test_a_full_disk_is_answered_store_1_and_the_node_comes_back_when_space_is_freed(
    small_disk: Path, tmp_path: Path
) -> None:
    token = provision(small_disk, {})
    node = Server(small_disk, log_dir=tmp_path, env={"ALARMHUB_STORE_COMMIT_TIMEOUT": "2"})
    filler = Filler(small_disk / "filler")
    node.start()
    try:
        with Senders(node, token, SENDERS) as senders:
            wait_for(lambda: len(senders.acknowledged) >= BEFORE, "load under way", 60)
            filling_at = time.monotonic()
            filler.start()
            wait_for(filler.full.is_set, "the disk full", 60)
            wait_for(lambda: senders.refused() >= REFUSED, "signals refused while full", 120)
            first_refusal = min(t for t, status, _ in senders.answers if status == 503)
            health = wait_for(lambda: unhealthy(node), "/healthz 503 while full", 60)
            filler.free()
            freed_at = time.monotonic()
            first = wait_for(lambda: senders.first_ack_after(freed_at), "a 200 again", 60)
            healthy = wait_for(lambda: not unhealthy(node), "/healthz 200 again", 60)
            senders.stop.set()
        node.stop(timeout=30)
    finally:
        node.kill()
    answers = senders.answers
    while_full = [(status, code) for t, status, code in answers if first_refusal <= t < freed_at]
    not_200 = [(status, code) for _, status, code in answers if status != 200]
    database = small_disk / "alarmhub.db"
    missing = senders.acknowledged - stored(database)
    checked = integrity(database)
    print(
        f"\nfull disk: acknowledged {len(senders.acknowledged)}, missing {len(missing)}; "
        f"the first 503 {first_refusal - filling_at:.2f} s after the filler started; from it "
        f"to the free ({freed_at - first_refusal:.1f} s): {len(while_full)} answers, "
        f"{sum(1 for s, _ in while_full if s == 200)} of them 200; answers not 200: "
        f"{len(not_200)} {sorted(set(not_200), key=str)}; /healthz while full: "
        f"{health.status_code} {health.json().get('message')}; the free to the first 200 "
        f"{first - freed_at:.2f} s; integrity_check {checked}"
    )
    assert not missing, f"acknowledged but not stored: {sorted(missing)[:10]}"
    assert {(status, code) for status, code in not_200} <= {(503, "STORE-1")}
    assert checked == "ok"
    assert healthy
