"""Counts kept in the process (``alarmhub.metrics.Tally``) reach their counter when flushed,
once, and when ``/metrics`` is read."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter

from alarmhub import metrics


def test_counts_reach_the_counter_when_flushed_and_once() -> None:
    counter = Counter("tally_test", "A test counter", ["kind"], registry=CollectorRegistry())
    tally = metrics.Tally(counter.labels("x"))
    for _ in range(5):
        tally.inc()
    assert counter.labels("x")._value.get() == 0
    metrics.flush_tallies()
    assert counter.labels("x")._value.get() == 5
    metrics.flush_tallies()
    tally.inc()
    metrics.flush_tallies()
    assert counter.labels("x")._value.get() == 6


def test_the_exposition_flushes_this_process_first() -> None:
    tally = metrics.Tally(metrics.SIGNALS_ACCEPTED.labels("tally-test"))
    tally.inc()
    tally.inc()
    text = metrics.exposition().decode()
    assert 'alarmhub_signals_accepted_total{interface="tally-test"} 2.0' in text
