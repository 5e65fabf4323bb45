"""The documentation's shell examples run as written: every ```` ```sh ```` block of README.md and
docs/*.md marked ``<!-- runnable -->`` runs against one demo node (``alarmhub serve --demo`` on
free ports, a DC-09 listener included), one test case per file, its blocks in order.

The rules (tests/support/runnable_docs.py has them in full, README.md's Development section in
short): each block runs with ``bash -e -o pipefail`` in a working directory of its file's own
that holds ``.venv`` (this venv, its bin first on PATH) and ``var`` (the node's data directory);
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

from tests.support.processes import ROOT, Server, free_port, wait_for
from tests.support.runnable_docs import Block, Node, run_block, runnable_blocks

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARKED = [path.relative_to(ROOT).as_posix() for path in DOCS if runnable_blocks(path)]

# long: the files run one after another on one node, minutes in all under load, so the module
# starts among the first
pytestmark = pytest.mark.long


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
        banner = wait_for(lambda: re.search(r"^  try it +(.+)$", server.log(), re.M), "banner")
        yield Node(server.url, dc09, env, banner.group(1))
    finally:
        server.stop()


def test_every_doc_has_runnable_blocks() -> None:
    """The files whose examples are meant to run (a marker lost by an edit fails here)."""
    documented = {"README.md", "docs/accounts.md", "docs/dc09.md", "docs/integrator-api.md",
                  "docs/notifications.md", "docs/outputs.md", "docs/receivers.md"}  # fmt: skip
    assert documented <= set(MARKED)


def checkout(node: Node, directory: Path) -> Path:
    """``directory`` made to look like a checkout after ``make run``: .venv and var."""
    (directory / ".venv").symlink_to(Path(sys.executable).parent.parent)
    (directory / "var").symlink_to(node.env["ALARMHUB_DATA_DIR"])
    return directory


@pytest.mark.parametrize("name", MARKED)
def test_the_marked_blocks_run_as_written(name: str, node: Node, tmp_path: Path) -> None:
    workdir = checkout(node, tmp_path)
    for block in runnable_blocks(ROOT / name, name):
        run_block(block, node, workdir)


def test_the_banners_try_it_command_runs_as_printed(node: Node, tmp_path: Path) -> None:
    """On a port other than make run's the command names the node (--url), and the token; run
    with neither ALARMHUB_URL nor ALARMHUB_TOKEN set, it stores its signal."""
    assert f"--url {node.url} " in node.banner
    bare = {k: v for k, v in node.env.items() if k not in ("ALARMHUB_URL", "ALARMHUB_TOKEN")}
    block = Block(tmp_path, "the banner", 0, f"{node.banner}\n# signal accepted (stored durably)\n")
    run_block(block, Node(node.url, node.dc09, bare, node.banner), checkout(node, tmp_path))
