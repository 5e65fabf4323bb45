"""The DC-09 account states the station is shown, from the supervision interval, the last
message and whether the account has failed."""

from __future__ import annotations

from alarmhub.core.supervision import dc09_interval_s, dc09_state


def test_an_account_without_an_interval_of_its_own_has_the_station_default() -> None:
    assert dc09_interval_s(None, 90) == 90
    assert dc09_interval_s(30, 90) == 30
    assert dc09_interval_s(0, 90) == 0  # turned off for this account


def test_the_states_of_a_dc09_account() -> None:
    assert dc09_state(90, None, failed=False) == "never reported"
    assert dc09_state(0, None, failed=False) == "never reported"
    assert dc09_state(0, 1_000, failed=True) == "not supervised"
    assert dc09_state(90, 1_000, failed=True) == "communication failure"
    assert dc09_state(90, 1_000, failed=False) == "reporting"
