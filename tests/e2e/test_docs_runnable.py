"""The documentation's shell examples run as written: every ```` ```sh ```` block of README.md and
docs/*.md marked ``<!-- runnable -->`` runs against one demo node (``alarmhub serve --demo`` on
free ports, a DC-09 listener included), one test case per file, its blocks in order.

The rules (tests/support/runnable_docs.py has them in full, README.md's Development section in
short): each block runs with ``bash -e -o pipefail`` in a working directory of its file's own
that holds ``.venv/bin`` (this venv's, first on PATH) and ``var`` (the node's data directory);
``ALARMHUB_TOKEN`` is the demo token, ``ALARMHUB_DATA_DIR`` the data directory, ``ALARMHUB_URL``
the node; the literal ``http://127.0.0.1:8080`` in a block becomes the node's address and
``127.0.0.1:9999`` its DC-09 listener. A comment line right after a command names output that
must appear (in order, ``...`` for any text within a line). A failure names the file, the
block's first line and the output. The files share the node, so each file's blocks must run
whatever the others did before them.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.processes import ROOT, Server, free_port
from tests.support.runnable_docs import Node, run_block, runnable_blocks

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARKED = [path.relative_to(ROOT).as_posix() for path in DOCS if runnable_blocks(path)]


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    data_dir = tmp_path_factory.mktemp("docs-node")
    dc09 = f"127.0.0.1:{free_port()}"
    server = Server(data_dir, extra_args=("--demo", "--dc09-listen", dc09)).start()
    try:
        credentials = (data_dir / "DEMO-CREDENTIALS.txt").read_text()
        token = re.search(r"bearer token\s+(\S+)", credentials)
        assert token, credentials
        bin_dir = Path(sys.executable).parent
        env = {k: v for k, v in os.environ.items() if not k.startswith("ALARMHUB_")}
        env |= {
            "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
            "ALARMHUB_TOKEN": token.group(1),
            "ALARMHUB_DATA_DIR": str(data_dir),
            "ALARMHUB_URL": server.url,
        }
        yield Node(server.url, dc09, env)
    finally:
        server.stop()


def test_every_doc_has_runnable_blocks() -> None:
    """The files whose examples are meant to run (a marker lost by an edit fails here)."""
    assert {"README.md", "docs/accounts.md", "docs/dc09.md", "docs/integrator-api.md"} <= set(
        MARKED
    )


@pytest.mark.parametrize("name", MARKED)
def test_the_marked_blocks_run_as_written(name: str, node: Node, tmp_path: Path) -> None:
    data_dir = Path(node.env["ALARMHUB_DATA_DIR"])
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "bin").symlink_to(Path(sys.executable).parent)
    (tmp_path / "var").symlink_to(data_dir)
    for block in runnable_blocks(ROOT / name, name):
        run_block(block, node, tmp_path)
