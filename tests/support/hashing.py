"""The Argon2 password hasher in the test process, made to hash each password once and to
check each (hash, password) pair once: the hashes stay real Argon2 ones with the station's
parameters, but a station of three operators no longer costs three hashes of a quarter of a
second of CPU in every test. Servers the tests start are other processes: they hash and check
as always, and so do the tests that look at the hashes themselves (they see real ones)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from argon2 import PasswordHasher


@contextmanager
def hashing_once() -> Iterator[None]:
    """Within the block, every Argon2 hasher of this process remembers what it hashed and
    checked (by its parameters and the password)."""
    hashes: dict[tuple[Any, ...], str] = {}
    checks: dict[tuple[str, str], Callable[[], bool]] = {}
    real_hash, real_verify = PasswordHasher.hash, PasswordHasher.verify

    def hash_once(self: PasswordHasher, password: str | bytes, *, salt: bytes | None = None) -> str:
        if salt is not None:
            return real_hash(self, password, salt=salt)
        key = (self.time_cost, self.memory_cost, self.parallelism, self.hash_len, password)
        if key not in hashes:
            hashes[key] = real_hash(self, password)
        return hashes[key]

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
