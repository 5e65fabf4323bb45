"""Every fuzz target of ``tests/fuzz`` (``make fuzz``, not part of this suite) still runs: a
few inputs each, so that a change of the code they drive (a route's signature, a parser's
answer) cannot leave a target broken until its next long run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FUZZ = ROOT / "tests" / "fuzz"
SUMMARY = "0 crashes, 0 answers outside the set"


@pytest.mark.long  # CPU-bound: started first
def test_every_fuzz_target_runs_a_few_inputs_cleanly() -> None:
    targets = sorted(path.name for path in FUZZ.glob("fuzz_*.py"))
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
         "-o", "python_files=fuzz_*.py", str(FUZZ)],
        cwd=ROOT, env={**os.environ, "ALARMHUB_FUZZ_EXAMPLES": "50"},
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert result.stdout.count(SUMMARY) == len(targets), result.stdout[-4000:]
