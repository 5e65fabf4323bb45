"""The rules by which tests/e2e/test_docs_runnable.py reads the documentation: which blocks are
runnable and what output a block promises."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.runnable_docs import missing_output, runnable_blocks

DOC = """# A doc

```sh
not marked
```

<!-- runnable -->
```sh
# explains only: at the start
alarmhub send x      # explains only: at the end of a command
# signal accepted (stored durably)
# and a second line of output

# explains only: after a blank line
curl -s -X POST http://127.0.0.1:8080/rx \\
     -d '{}'
# {"status_code":200,...}
```

- a list item

  <!-- runnable -->
  ```sh
  alarmhub pending
  ```
"""


def test_only_marked_blocks_with_their_first_line_and_promised_output(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(DOC)
    first, indented = runnable_blocks(doc)
    assert (first.name, first.line) == ("doc.md", 9)
    assert first.text.startswith("# explains only: at the start\n")
    assert first.expected == [
        "signal accepted (stored durably)",
        "and a second line of output",
        '{"status_code":200,...}',
    ]
    assert (indented.line, indented.text, indented.expected) == (24, "alarmhub pending\n", [])


def test_a_marker_must_be_right_before_a_sh_fence(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("<!-- runnable -->\n\n```sh\nls\n```\n")
    with pytest.raises(AssertionError, match=r"doc\.md:1: .* not right before a ```sh fence"):
        runnable_blocks(doc)
    doc.write_text("<!-- runnable -->\n```sh\nls\n")
    with pytest.raises(AssertionError, match=r"doc\.md:2: the block is never closed"):
        runnable_blocks(doc)


def test_promised_output_appears_in_order_with_dots_for_any_text_in_a_line() -> None:
    output = 'signal accepted (stored durably)\n{"status_code":200,"status":"success"}\n'
    assert missing_output(["signal accepted", '{"status_code":200,...}'], output) is None
    assert missing_output(['{"status_code":200,...}', "signal accepted"], output) == (
        "signal accepted"
    )
    assert missing_output(["accepted...success"], output) == "accepted...success"
