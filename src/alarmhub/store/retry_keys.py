"""The DC-09 retry keys of the last retry window, held in the writer's memory.

On SQLite the writer process is the database's only writer, so it can remember the keys of the
tokens that have a window of their own (the DC-09 receiver's, ``dc09_retry_seconds``) itself:
looking one up is a dictionary's work, and remembering one writes nothing but the signal's own
row, which carries its key (column ``idempotency_key``). The table ``idempotency`` is then
neither read nor written for them, nor its two indexes, whose pages a batch of random keys
scattered over the disk, each written to the WAL and fsync'd.

Nothing is lost by a crash: at start the keys are read back from the signals of the last window
(:meth:`RetryKeys.recall`), so a retransmission after a restart is still answered from its first
commit. Changes made by a commit's transaction reach the memory only once that commit is durable
(:class:`Staged`): a commit that failed leaves nothing behind.

On a database shared by several nodes every writer must see every key, so they stay in the
table there (``store.commit``). Memory: about 460 bytes a key (measured), so a storm of 3,000
DC-09 events a second for the whole default window of 300 s holds about 900,000 keys (some
420 MB) until they expire; a station's ordinary traffic, a few hundred.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping

from sqlalchemy import Connection, select

from alarmhub.core.idempotency import Key, Remembered
from alarmhub.core.signal import Signal, SignalFields, digest
from alarmhub.store import schema
from alarmhub.store.commit import SIGNAL_COLUMNS

SIGNAL = schema.signal.c
RECALL_CHUNK = 5_000
CLOCK_SLACK_US = 60_000_000  # numbered in commit order, their clocks may differ a little

_RECALL = (
    select(*(SIGNAL[name] for name in SIGNAL_COLUMNS))
    .order_by(SIGNAL.incident_number.desc())
    .limit(RECALL_CHUNK)
)


class RetryKeys:
    """The remembered keys of the token names in ``windows_us`` (each name's window)."""

    def __init__(self, windows_us: Mapping[str, int]) -> None:
        self._windows_us = dict(windows_us)
        self._known: dict[Key, Remembered] = {}
        self._order: deque[tuple[int, Key]] = deque()  # (created_us, key), oldest first

    def __len__(self) -> int:
        return len(self._known)

    def covers(self, key: Key) -> bool:
        return key[0] in self._windows_us

    def get(self, key: Key) -> Remembered | None:
        return self._known.get(key)

    def staged(self) -> Staged:
        """A transaction's view: what it remembers and forgets, kept until :meth:`Staged.apply`."""
        return Staged(self)

    def remember(self, key: Key, known: Remembered) -> None:
        self._known[key] = known
        self._order.append((known.created_us, key))

    def forget(self, key: Key) -> None:
        self._known.pop(key, None)  # its place in the order is passed over when it expires

    def expire(self, now_us: int) -> int:
        """Forget the keys whose window has passed; how many."""
        order, known = self._order, self._known
        longest = max(self._windows_us.values(), default=0)
        forgotten = 0
        while order and order[0][0] < now_us - longest:
            created_us, key = order.popleft()
            current = known.get(key)
            if current is not None and current.created_us == created_us:
                del known[key]
                forgotten += 1
        # a shorter window of another token: its keys are forgotten on lookup (core.idempotency)
        return forgotten

    def recall(self, conn: Connection, now_us: int) -> int:
        """Read back the keys of the signals of the last window (newest first, by incident
        number, until the signals are older than every window); how many."""
        if not self._windows_us:
            return 0
        oldest_us = now_us - max(self._windows_us.values()) - CLOCK_SLACK_US
        below: int | None = None
        found: dict[Key, Remembered] = {}
        while True:
            query = _RECALL if below is None else _RECALL.where(SIGNAL.incident_number < below)
            rows = conn.execute(query).all()
            for row in rows:
                number, source, destination, *fields, token_name, received_us, key = row
                window_us = self._windows_us.get(token_name)
                if key is None or window_us is None or received_us < now_us - window_us:
                    continue
                sig = Signal(source, destination, SignalFields(*fields), token_name, received_us)
                found.setdefault((token_name, key), Remembered(number, received_us, digest(sig)))
            if len(rows) < RECALL_CHUNK or rows[-1].received_us < oldest_us:
                break
            below = rows[-1].incident_number
        for key, known in sorted(found.items(), key=lambda item: item[1].created_us):
            self.remember(key, known)
        return len(found)


class Staged:
    """What one transaction remembers and forgets, applied to the memory once it is durable."""

    def __init__(self, keys: RetryKeys) -> None:
        self._keys = keys
        self._remember: dict[Key, Remembered] = {}
        self._forget: list[Key] = []

    def covers(self, key: Key) -> bool:
        return self._keys.covers(key)

    def remembered(self, keys: Iterable[Key]) -> dict[Key, Remembered]:
        found = {}
        for key in keys:
            known = self._keys.get(key)
            if known is not None:
                found[key] = known
        return found

    def forget(self, keys: Iterable[Key]) -> None:
        self._forget.extend(keys)

    def remember(self, key: Key, known: Remembered) -> None:
        self._remember[key] = known

    def apply(self) -> None:
        for key in self._forget:
            self._keys.forget(key)
        for key, known in self._remember.items():
            self._keys.remember(key, known)
