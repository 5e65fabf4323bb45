"""The Idempotency-Key decisions of ``core.idempotency``, without a database."""

from __future__ import annotations

from alarmhub.core.idempotency import Remembered, plan, same_signal

HOUR = 3_600_000_000
A = ("driver-token", "key-a")
B = ("driver-token", "key-b")
OTHER_TOKEN = ("dc09", "key-a")


def test_signals_without_keys_are_all_new() -> None:
    decided = plan([None, None], [0, 0], {}, {}, HOUR, {})
    assert decided.fresh == [0, 1]
    assert not (decided.retries or decided.repeats or decided.conflicts or decided.remember)


def test_a_remembered_key_within_its_window_is_a_retry_or_a_conflict() -> None:
    remembered = {A: Remembered(41, 1_000, "fire")}
    decided = plan(
        [A, A, None], [2_000, 2_000, 2_000], {0: "fire", 1: "burglary"}, remembered, HOUR, {}
    )
    assert decided.retries == {0: 41}
    assert decided.conflicts == [1]
    assert decided.fresh == [2]
    assert decided.remember == {}


def test_a_remembered_key_past_its_window_is_forgotten_and_the_signal_is_new() -> None:
    remembered = {A: Remembered(41, 0, "fire")}
    decided = plan([A], [HOUR + 1], {0: "burglary"}, remembered, HOUR, {})
    assert decided.forget == [A]
    assert decided.fresh == [0]
    assert decided.remember == {A: 0}


def test_a_token_with_a_window_of_its_own() -> None:
    remembered = {OTHER_TOKEN: Remembered(7, 0, "fire")}
    windows = {"dc09": 60_000_000}
    decided = plan([OTHER_TOKEN], [60_000_001], {0: "fire"}, remembered, HOUR, windows)
    assert decided.fresh == [0]  # past the DC-09 retry window, though within the hour
    decided = plan([OTHER_TOKEN], [60_000_000], {0: "fire"}, remembered, HOUR, windows)
    assert decided.retries == {0: 7}


def test_within_one_batch_the_first_signal_of_a_key_is_new() -> None:
    keys = [A, B, A, A]
    decided = plan(keys, [5] * 4, {0: "fire", 1: "fire", 2: "fire", 3: "panic"}, {}, HOUR, {})
    assert decided.fresh == [0, 1]
    assert decided.repeats == {2: 0}
    assert decided.conflicts == [3]
    assert decided.remember == {A: 0, B: 1}


def test_keys_remembered_without_a_digest_take_any_signal_as_a_retry() -> None:
    assert same_signal(None, "anything")
    assert same_signal("fire", "fire")
    assert not same_signal("fire", "panic")
