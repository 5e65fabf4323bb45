"""The console's sign-in rules without a server: the throttle, a session's life, and the turns
password checks take between client addresses."""

from __future__ import annotations

import asyncio

from alarmhub.console.security import SESSION_SECONDS, FairChecks
from alarmhub.core import sign_in, units
from alarmhub.core.errors import SignInBusy


def test_a_session_lasts_a_twelve_hour_shift_and_its_cookie_as_long() -> None:
    assert sign_in.session_expires_us(5) == 5 + units.hours_us(12)
    assert SESSION_SECONDS == 12 * 60 * 60


def test_the_throttle_counts_pairs_and_doubles_the_wait() -> None:
    throttle = sign_in.SignInThrottle()
    waits = [throttle.attempt("10.0.0.1", "OP1", 0.0) for _ in range(10)]
    assert waits[:5] == [0.0] * 5
    assert waits[5:] == [60.0, 120.0, 240.0, 480.0, 900.0], "30 s after the fifth, doubling"
    assert throttle.attempt("10.0.0.1", "OP1", 10_000.0) == 0.0, "old failures are forgotten"
    assert throttle.attempt("10.0.0.1", "OP2", 0.0) == 0.0
    assert throttle.attempt("10.0.0.2", "OP1", 0.0) == 0.0
    fresh = sign_in.SignInThrottle()
    for _ in range(5):
        fresh.attempt("10.0.0.1", "OP1", 0.0)
    assert fresh.attempt("10.0.0.1", "OP1", 29.0) > 0, "within 30 s of the fifth failure"
    fresh.succeeded("10.0.0.1", "OP1")
    assert fresh.attempt("10.0.0.1", "OP1", 29.0) == 0.0, "the right password forgets"
    # an IPv6 host counts by its /64; the table forgets its least recent pairs
    assert sign_in.client_key("2001:db8::1") == sign_in.client_key("2001:db8::ffff")
    small = sign_in.SignInThrottle(max_pairs=100)
    for n in range(1_000):
        small.attempt("10.0.0.1", f"{n}", 0.0)
    assert len(small) == 100


def test_password_checks_take_turns_between_addresses() -> None:
    async def run() -> tuple[list[str], list[bool]]:
        checks = FairChecks(slots=1, per_address=4, total=6)
        order: list[str] = []
        refused: list[bool] = []

        async def one(address: str) -> None:
            try:
                async with checks.turn(address):
                    order.append(address)
                    await asyncio.sleep(0.01)
            except SignInBusy as busy:
                refused.append(busy.per_address)

        tasks = [asyncio.create_task(one("attacker")) for _ in range(6)]
        await asyncio.sleep(0)
        tasks += [asyncio.create_task(one("operator")), asyncio.create_task(one("other"))]
        await asyncio.gather(*tasks)
        return order, refused

    order, refused = asyncio.run(run())
    assert refused == [True, True], "one address holds at most 4 places"
    assert order.index("operator") <= 2 and order.index("other") <= 3, order
    assert order.count("attacker") == 4
