"""Prometheus metrics of a node, served at ``/metrics``.

A node of several worker processes (``serve --workers N``) starts each with MULTIPROCESS_DIR in
its environment (prometheus_client's multiprocess mode): every worker writes its values there,
and ``/metrics``, whichever worker answers, sums the counters and histograms of them all, the
dead ones' included; each gauge says how its workers' values combine (``multiprocess_mode``).

The counters of every signal count through a :class:`Tally`, added to the counter once a second
(and when this process answers ``/metrics``): a worker's counts reach the others' ``/metrics``
within TALLY_SECONDS."""

from __future__ import annotations

import asyncio
import os
from typing import ClassVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client import multiprocess as _multiprocess
from prometheus_client import values as _values
from prometheus_client.metrics import MetricWrapperBase

MULTIPROCESS_DIR = "PROMETHEUS_MULTIPROC_DIR"
TALLY_SECONDS = 1.0


class Tally:
    """A counter (one labelled child) counted in this process, added to the counter by
    :func:`flush_tallies`: an increment of a multiprocess counter takes a lock, asks the
    process id and writes the shared file (about 1.5 µs), twice a DC-09 frame."""

    _all: ClassVar[list[Tally]] = []

    def __init__(self, counter: Counter) -> None:
        self._counter = counter
        self.count = 0
        Tally._all.append(self)

    def inc(self) -> None:
        self.count += 1

    def flush(self) -> None:
        if self.count:
            count, self.count = self.count, 0
            self._counter.inc(count)


def flush_tallies() -> None:
    """Add what every tally of this process counted to its counter."""
    for tally in Tally._all:
        tally.flush()


async def tallies() -> None:
    """Flush the tallies every TALLY_SECONDS (a task of the node's and of each worker's)."""
    while True:
        await asyncio.sleep(TALLY_SECONDS)
        flush_tallies()


def exposition() -> bytes:
    """The text of ``/metrics``: this process's metrics, or every worker's of the node."""
    flush_tallies()
    directory = os.environ.get(MULTIPROCESS_DIR)
    if not directory:
        return generate_latest()
    registry = CollectorRegistry()
    _multiprocess.MultiProcessCollector(registry, path=directory)  # type: ignore[no-untyped-call]
    return generate_latest(registry)


def follow_environment() -> None:
    """Take multiprocess mode in a process forked from one that imported this module without
    MULTIPROCESS_DIR (a worker the node's spawner forked): every metric's values, its labelled
    children's included, start again in this process's own file of that directory."""
    if not os.environ.get(MULTIPROCESS_DIR) or _values.ValueClass is not _values.MutexValue:
        return
    _values.ValueClass = _values.MultiProcessValue()  # type: ignore[no-untyped-call]
    for metric in list(globals().values()):
        if not isinstance(metric, MetricWrapperBase):
            continue
        if metric._is_parent():  # type: ignore[no-untyped-call]
            for child in list(metric._metrics.values()):
                child._metric_init()  # type: ignore[no-untyped-call]
        else:
            metric._metric_init()  # type: ignore[no-untyped-call]


def process_ended(pid: int, directory: str) -> None:
    """A worker is gone: its gauges no longer count (its counters still do)."""
    _multiprocess.mark_process_dead(pid, directory)  # type: ignore[no-untyped-call]


SIGNALS_ACCEPTED = Counter(
    "alarmhub_signals_accepted", "Signals durably stored and acknowledged", ["interface"]
)
SIGNALS_REFUSED = Counter(
    "alarmhub_signals_refused", "Signals refused, by error code", ["interface", "error_code"]
)
SIGNALS_DEDUPLICATED = Counter(
    "alarmhub_signals_deduplicated",
    "Retries answered from an earlier commit (Idempotency-Key) instead of stored again",
    ["interface"],
)
COMMIT_BATCH = Histogram(
    "alarmhub_commit_batch_size",
    "Signals per group commit",
    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048),
)
COMMIT_SECONDS = Histogram(
    "alarmhub_commit_seconds",
    "Time of one group commit, fsync included",
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
)
COMMIT_FAILURES = Counter(
    "alarmhub_commit_failures", "Group commits that failed or were not completed in time"
)
HEARTBEATS = Counter("alarmhub_heartbeats", "Heartbeats accepted")
HEARTBEAT_REFUSED = Counter(
    "alarmhub_heartbeats_refused", "Heartbeats refused, by error code", ["error_code"]
)
# every worker knows every pair and account (it reads what the others write): the largest count
SOURCES_FAILED = Gauge(
    "alarmhub_sources_failed",
    "Supervised source:destination pairs now in heartbeat failure",
    multiprocess_mode="livemax",
)
SOURCES_SUPERVISED = Gauge(
    "alarmhub_sources_supervised",
    "Source:destination pairs under heartbeat supervision",
    multiprocess_mode="livemax",
)
DC09_FRAMES = Counter(
    "alarmhub_dc09_frames", "DC-09 frames received, by answer (ACK, NAK, DUH, none)", ["answer"]
)
DC09_CONNECTIONS = Gauge(
    "alarmhub_dc09_connections", "Open DC-09 TCP connections", multiprocess_mode="livesum"
)
DC09_ACCOUNTS_SUPERVISED = Gauge(
    "alarmhub_dc09_accounts_supervised",
    "DC-09 accounts under supervision",
    multiprocess_mode="livemax",
)
DC09_ACCOUNTS_FAILED = Gauge(
    "alarmhub_dc09_accounts_failed",
    "DC-09 accounts now in communication failure",
    multiprocess_mode="livemax",
)
SUPERVISION_LEADER = Gauge(
    "alarmhub_supervision_leader",
    "1 when this node runs the heartbeat and DC-09 supervision checks (the leader), else 0",
    multiprocess_mode="livemax",  # one of its workers leads
)
QUERIES = Counter("alarmhub_queries", "Queries of the query interface run, by method", ["method"])
QUERIES_REFUSED = Counter(
    "alarmhub_queries_refused",
    "Query-interface requests refused before any query ran, by HTTP status (401, 413)",
    ["status"],
)
RECEIVER_FRAMES = Counter(
    "alarmhub_receiver_frames",
    "Frames of the receiver links, by link and answer (ack, nak; unreadable: kept and ACKed)",
    ["link", "answer"],
)
RECEIVER_LINK_UP = Gauge(
    "alarmhub_receiver_link_up",
    "1 while a receiver link run by this node is up (frames or link tests within its timeout)",
    ["link"],
    multiprocess_mode="livemax",
)
OUTPUT_QUEUED = Gauge(
    "alarmhub_output_queued",
    "Frames of an automation output run by this node committed and not yet ACKed downstream",
    ["output"],
    multiprocess_mode="livemax",
)
OUTPUT_SENT = Counter(
    "alarmhub_output_sent",
    "Frames sent by the automation outputs (their first try; link tests not counted), by output",
    ["output"],
)
OUTPUT_RESENT = Counter(
    "alarmhub_output_resent",
    "Frames sent again by the automation outputs (after a NAK, no answer or a new connection)",
    ["output"],
)
OUTPUT_OLDEST_QUEUED = Gauge(
    "alarmhub_output_oldest_queued_seconds",
    "Age of the oldest frame an automation output run by this node has not delivered yet",
    ["output"],
    multiprocess_mode="livemax",
)
OUTPUT_UP = Gauge(
    "alarmhub_output_up",
    "1 while an automation output run by this node is up (its last frame or link test ACKed)",
    ["output"],
    multiprocess_mode="livemax",
)
NOTIFICATIONS = Counter(
    "alarmhub_notifications",
    "Attempts to send a message to a subscriber, by channel and how each ended (sent, retry, "
    "failed)",
    ["channel", "outcome"],
)
