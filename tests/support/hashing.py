"""The Argon2 password hasher in the test process, made cheap: it hashes each password once, with
the smallest parameters Argon2 allows (``TEST_PARAMETERS``), and checks each (hash, password)
pair once. The hashes stay real Argon2id ones, checked by the real Argon2, and a check reads the
parameters from the hash itself: so the servers the tests start check the passwords of stations
the tests made in a few microseconds, where a hash or a check with the station's parameters
(RFC 9106's second profile: 64 MiB, 3 passes, 4 lanes; tests/unit/test_password_hashing.py)
costs about 0.3 s of CPU, and sign-ins, passcodes and their refusals made that about 70 s of
every suite run. What the servers hash themselves (a password or a passcode set through them)
they hash with the station's parameters, as always."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from argon2 import PasswordHasher

TEST_PARAMETERS = {"time_cost": 1, "memory_cost": 8, "parallelism": 1}
"""Argon2's smallest: one pass over 8 KiB in one lane."""


@contextmanager
def hashing_once() -> Iterator[None]:
    """Within the block, every Argon2 hasher of this process remembers what it hashed and
    checked (by its parameters and the password)."""
    cheap = PasswordHasher(**TEST_PARAMETERS)
    hashes: dict[str | bytes, str] = {}
    checks: dict[tuple[str, str], Callable[[], bool]] = {}
    real_hash, real_verify = PasswordHasher.hash, PasswordHasher.verify

    def hash_once(self: PasswordHasher, password: str | bytes, *, salt: bytes | None = None) -> str:
        if salt is not None:
            return real_hash(self, password, salt=salt)
        if password not in hashes:
            hashes[password] = real_hash(cheap, password)
        return hashes[password]

    def verify_once(self: PasswordHasher, hash: str | bytes, password: str | bytes) -> bool:
        if not isinstance(hash, str) or not isinstance(password, str):
            return real_verify(self, hash, password)
        key = hash, password
        if key not in checks:
            checks[key] = _outcome(lambda: real_verify(self, hash, password))
        return checks[key]()

    PasswordHasher.hash = hash_once  # type: ignore[method-assign]
    PasswordHasher.verify = verify_once  # type: ignore[method-assign]
    try:
        yield
    finally:
        PasswordHasher.hash = real_hash  # type: ignore[method-assign]
        PasswordHasher.verify = real_verify  # type: ignore[method-assign]


def _outcome(verify: Callable[[], bool]) -> Callable[[], bool]:
    """What a check gave, to give again: its answer, or a new exception of the same kind as
    the one it raised."""
    try:
        answer = verify()
    except Exception as exc:
        kind: type[Exception] = type(exc)
        args: tuple[Any, ...] = exc.args

        def again() -> bool:
            raise kind(*args)

        return again
    return lambda: answer
