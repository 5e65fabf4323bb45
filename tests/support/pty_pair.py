"""A serial line for tests: two pseudo-terminals joined by ``socat`` (raw, no echo), as a
null-modem cable joins a receiver's serial port to the automation computer's."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def pty_pair(directory: Path, seconds: float = 10.0) -> Iterator[tuple[Path, Path]]:
    """Two linked pty paths, ``directory/A`` and ``directory/B``, while ``socat`` runs."""
    socat = shutil.which("socat")
    assert socat, "socat is needed for the serial line tests (.ci/run installs it)"
    a, b, log = directory / "A", directory / "B", directory / "socat.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            [socat, "-d", "-d", f"pty,raw,echo=0,link={a}", f"pty,raw,echo=0,link={b}"],
            stdout=subprocess.DEVNULL,
            stderr=out,
        )
    try:
        deadline = time.monotonic() + seconds
        while not (a.exists() and b.exists()):
            if process.poll() is not None:
                raise AssertionError(f"socat exited {process.returncode}: {log.read_text()}")
            assert time.monotonic() < deadline, "socat made no pty pair"
            time.sleep(0.02)
        yield a, b
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
