"""A node's signal writer (a thread) beside a test's store, listening on a Unix socket as a
node's writer does for its delivery workers (``outbound.writer_records``)."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

from sqlalchemy.engine import Engine

from alarmhub.settings import load
from alarmhub.store.writer import SignalWriter
from alarmhub.store.writer_process import WriterThread


@contextlib.contextmanager
def writer_address() -> Iterator[str]:
    """A path for the writer's socket, in a directory of its own (a Unix socket's path is
    short: not under a test's deep temporary directory)."""
    run_dir = tempfile.mkdtemp(prefix="ah-")
    try:
        yield str(Path(run_dir) / "writer.sock")
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


@contextlib.asynccontextmanager
async def writer_beside(
    engine: Engine, tmp_path: Path, address: str
) -> AsyncIterator[SignalWriter]:
    """A node's writer (a thread) on ``engine``'s database, listening at ``address``."""
    url = engine.url.render_as_string(hide_password=False)
    writer = SignalWriter(engine, load(tmp_path, database_url=url), WriterThread.start,
                          listen=address)  # fmt: skip
    await writer.start()
    try:
        yield writer
    finally:
        await writer.stop()
