"""The one clock: microseconds since the UNIX epoch, UTC."""

import time


def now_us() -> int:
    """Current time in microseconds since the epoch."""
    return time.time_ns() // 1000
