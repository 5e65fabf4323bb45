"""A process the node starts that must not outlive it: on Linux the kernel kills it when its
parent dies (``PR_SET_PDEATHSIG``), however the parent dies, SIGKILL included; and
:func:`prctl`, the one way the node's processes ask the kernel such things."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def prctl(option: int, value: int | bytes, name: str) -> None:
    """``prctl(option, value)`` of Linux for this process; OSError (naming ``name``) if it
    fails."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({name}) failed")


def die_with_parent(parent: int) -> None:
    """Have this process killed when its parent ``parent`` dies; exit at once if it is dead
    already (it died before this call could ask)."""
    if sys.platform.startswith("linux"):
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, "PR_SET_PDEATHSIG")
    if os.getppid() != parent:
        raise SystemExit(1)
