"""Prometheus metrics of a node, served at ``/metrics``."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

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
COMMIT_FAILURES = Counter("alarmhub_commit_failures", "Group commits that failed")
HEARTBEATS = Counter("alarmhub_heartbeats", "Heartbeats accepted")
HEARTBEAT_REFUSED = Counter(
    "alarmhub_heartbeats_refused", "Heartbeats refused, by error code", ["error_code"]
)
SOURCES_FAILED = Gauge(
    "alarmhub_sources_failed", "Supervised source:destination pairs now in heartbeat failure"
)
SOURCES_SUPERVISED = Gauge(
    "alarmhub_sources_supervised", "Source:destination pairs under heartbeat supervision"
)
DC09_FRAMES = Counter(
    "alarmhub_dc09_frames", "DC-09 frames received, by answer (ACK, NAK, DUH, none)", ["answer"]
)
DC09_CONNECTIONS = Gauge("alarmhub_dc09_connections", "Open DC-09 TCP connections")
DC09_ACCOUNTS_SUPERVISED = Gauge(
    "alarmhub_dc09_accounts_supervised", "DC-09 accounts under supervision"
)
DC09_ACCOUNTS_FAILED = Gauge(
    "alarmhub_dc09_accounts_failed", "DC-09 accounts now in communication failure"
)
SUPERVISION_LEADER = Gauge(
    "alarmhub_supervision_leader",
    "1 when this node runs the heartbeat and DC-09 supervision checks (the leader), else 0",
)
QUERIES = Counter("alarmhub_queries", "Queries of the query interface run, by method", ["method"])
QUERIES_REFUSED = Counter(
    "alarmhub_queries_refused",
    "Query-interface requests refused before any query ran, by HTTP status (401, 413)",
    ["status"],
)
