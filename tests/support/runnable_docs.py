"""The shell examples of the documentation that are marked runnable: finding them, what output
each promises, and running them against a demo node (``tests/e2e/test_docs_runnable.py``).

The rules, which README.md's Development section repeats for writers of the docs:

- A block is runnable when the line right before its ```` ```sh ```` fence is
  ``<!-- runnable -->`` (an HTML comment, invisible where the Markdown is rendered).
- Each block runs with ``bash -e -o pipefail``, the blocks of one file in order and in one
  working directory of their own, which holds ``.venv`` (this venv, its ``bin`` also first on
  PATH) and ``var`` (the demo node's data directory), as in a checkout after ``make run``.
  ``ALARMHUB_TOKEN`` is the demo's bearer token, ``ALARMHUB_DATA_DIR`` the node's data directory
  and ``ALARMHUB_URL`` its address; in the block's text ``http://127.0.0.1:8080`` (the address of
  ``make run``) becomes the node's address and ``127.0.0.1:9999`` (its DC-09 port) the node's
  DC-09 listener.
- Expected output: a comment line right after a command line (or after another such comment)
  states a line of output: its text after ``# `` must appear in what the block printed (standard
  output and error together), each after the one before it, ``...`` standing for any text within
  a line. A comment after a blank line, or at the start of a block, only explains; so does a
  comment at the end of a command line.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

MARKER = "<!-- runnable -->"
FENCE = "```"
MAKE_RUN_URL = "http://127.0.0.1:8080"
MAKE_RUN_DC09 = "127.0.0.1:9999"


@dataclass(frozen=True)
class Block:
    """A runnable shell block: its file (and the name it is shown by), the line number of its
    first line, its text."""

    path: Path
    name: str
    line: int
    text: str

    @property
    def expected(self) -> list[str]:
        """The output its comments promise, in order (see the module's rules)."""
        found: list[str] = []
        after_command = False
        for line in self.text.splitlines():
            stripped = line.strip()
            if stripped.startswith("#"):
                if after_command:
                    found.append(stripped.removeprefix("#").strip())
            else:
                after_command = bool(stripped)
        return found


def runnable_blocks(path: Path, name: str | None = None) -> list[Block]:
    """The blocks of a Markdown file marked runnable, in order, shown by ``name`` (the file's
    name unless given). A marker that is not right before a ```` ```sh ```` fence, or a block
    that is never closed, is an error."""
    name = name or path.name
    lines = path.read_text().splitlines()
    blocks = []
    for number, line in enumerate(lines, start=1):
        if line.strip() != MARKER:
            continue
        fence = lines[number] if number < len(lines) else ""
        if fence.strip() != FENCE + "sh":
            raise AssertionError(f"{name}:{number}: {MARKER} is not right before a ```sh fence")
        indent = fence[: len(fence) - len(fence.lstrip())]
        body = []
        for inner in lines[number + 1 :]:
            if inner.strip() == FENCE:
                break
            body.append(inner.removeprefix(indent))
        else:
            raise AssertionError(f"{name}:{number + 1}: the block is never closed")
        blocks.append(Block(path, name, number + 2, "\n".join(body) + "\n"))
    return blocks


def missing_output(expected: list[str], output: str) -> str | None:
    """The first expected line that does not appear in ``output`` after the ones before it."""
    position = 0
    for text in expected:
        pattern = "[^\n]*?".join(re.escape(part) for part in text.split("..."))
        found = re.compile(pattern).search(output, position)
        if found is None:
            return text
        position = found.end()
    return None


@dataclass(frozen=True)
class Node:
    """Where the blocks run: the node's address and DC-09 listener, the environment, and the
    "try it" command of its start banner."""

    url: str
    dc09: str
    env: dict[str, str]
    banner: str


def run_block(block: Block, node: Node, workdir: Path, timeout: float = 120.0) -> str:
    """Run ``block`` in ``workdir`` against ``node``; its output. Raises AssertionError naming
    the file, the block's first line and the output when it fails or misses expected output."""
    script = block.text.replace(MAKE_RUN_URL, node.url).replace(MAKE_RUN_DC09, node.dc09)
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", script],
        cwd=workdir,
        env=node.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
        check=False,
    )
    where = f"{block.name}:{block.line}"
    if done.returncode != 0:
        raise AssertionError(f"{where}: the block exited {done.returncode}:\n{done.stdout}")
    missing = missing_output(block.expected, done.stdout)
    if missing is not None:
        raise AssertionError(f"{where}: the output lacks {missing!r}:\n{done.stdout}")
    return done.stdout
