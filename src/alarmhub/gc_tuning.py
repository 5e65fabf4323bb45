"""Garbage collection settings of the node's long-running processes."""

from __future__ import annotations

import gc

GC_GEN0_THRESHOLD = 20_000


def quiet_garbage_collector() -> None:
    """Keep full collections off the signal path.

    Everything built at start-up (modules, tables, the app, the router's state) lives as long as
    the process; frozen, it is no longer walked by every full collection, which would otherwise
    stall the process for tens of milliseconds several times a second under load. Fewer young
    collections: each request or routed signal makes many short-lived containers.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_GEN0_THRESHOLD, 20, 100)
