"""The station's Argon2 parameters for operators' passwords and contacts' passcodes: RFC 9106's
second recommended profile (Argon2id, 64 MiB, 3 passes, 4 lanes), argon2-cffi's default. The
tests' own hashes are cheaper (tests/support/hashing.py): this is where the station's are held."""

from __future__ import annotations

from argon2 import Type

from alarmhub.store import operators, passcodes, response, sessions


def test_the_station_hashes_with_rfc_9106s_second_profile() -> None:
    hasher = operators.HASHER
    assert hasher.type is Type.ID
    assert (hasher.memory_cost, hasher.time_cost, hasher.parallelism) == (65536, 3, 4)
    assert (hasher.hash_len, hasher.salt_len) == (32, 16)


def test_every_hash_of_the_station_is_made_by_that_hasher() -> None:
    assert sessions.HASHER is passcodes.HASHER is response.HASHER is operators.HASHER
