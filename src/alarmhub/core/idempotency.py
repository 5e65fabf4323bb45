"""Idempotency-Keys (decisions section 10): which signals of a batch are new, which are retries of
a signal already stored, and which reuse a key for a different signal.

A key belongs to a token. A signal whose (token, key) is remembered within the key's window, and
that says the same as the remembered signal (the same :func:`~alarmhub.core.signal.digest`), is a
retry: it gets the first signal's incident number and is not stored again. A different signal
under a remembered key is a conflict: nothing is stored. Within one batch the first signal of a
key is new and the others are retries or conflicts of it. A remembered key whose window has
passed is forgotten, and its signal is new. No I/O: ``store.commit`` applies the plan.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

Key = tuple[str, str]
"""A token's name and an Idempotency-Key."""


@dataclass(frozen=True, slots=True)
class Remembered:
    """What the store remembers of a key: the incident number and time of its first signal, and
    that signal's digest (None for keys remembered before digests were kept: any signal under
    such a key counts as a retry)."""

    incident_number: int
    created_us: int
    digest: str | None


@dataclass(slots=True)
class Plan:
    """What to do with each position of a batch."""

    fresh: list[int] = field(default_factory=list)
    """Positions to store as new signals, in batch order."""
    retries: dict[int, int] = field(default_factory=dict)
    """Positions that repeat a remembered signal: its incident number."""
    repeats: dict[int, int] = field(default_factory=dict)
    """Positions that repeat an earlier position of this batch (which is fresh)."""
    conflicts: list[int] = field(default_factory=list)
    """Positions refused: their key was used for a different signal."""
    remember: dict[Key, int] = field(default_factory=dict)
    """Keys to remember, each with the position of its first signal."""
    forget: list[Key] = field(default_factory=list)
    """Remembered keys whose window has passed."""


def same_signal(remembered: str | None, said: str) -> bool:
    """Whether a signal with digest ``said`` repeats one remembered with digest ``remembered``."""
    return remembered is None or remembered == said


def plan(
    keys: Sequence[Key | None],
    received_us: Sequence[int],
    digests: Mapping[int, str],
    remembered: Mapping[Key, Remembered],
    window_us: int,
    windows_us: Mapping[str, int],
) -> Plan:
    """The plan for a batch: ``keys[i]`` is position i's (token, key) or None, ``digests`` the
    digest of every keyed position, ``remembered`` what the store holds of the batch's keys,
    ``windows_us`` the token names whose keys have a window of their own (else ``window_us``)."""
    decided = Plan()
    positions: dict[Key, list[int]] = {}
    for i, key in enumerate(keys):
        if key is None:
            decided.fresh.append(i)
        else:
            positions.setdefault(key, []).append(i)
    for key, indices in positions.items():
        first = indices[0]
        known = remembered.get(key)
        if known is not None and received_us[first] - known.created_us <= windows_us.get(
            key[0], window_us
        ):
            for i in indices:
                if same_signal(known.digest, digests[i]):
                    decided.retries[i] = known.incident_number
                else:
                    decided.conflicts.append(i)
            continue
        if known is not None:
            decided.forget.append(key)
        decided.remember[key] = first
        decided.fresh.append(first)
        for i in indices[1:]:
            if digests[i] == digests[first]:
                decided.repeats[i] = first
            else:
                decided.conflicts.append(i)
    decided.fresh.sort()
    return decided
