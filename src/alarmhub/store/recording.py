"""What the writer records for its node's delivery workers (SQLite, where the node is the only
one delivering): how their attempts ended and which lanes to settle, handed over by the
delivery process (:mod:`alarmhub.outbound.writer_records`, frames ``framing.RECORD``).

SQLite has one write lock. The delivery process recording in transactions of its own held it
while its thread waited for a core or for the interpreter, and a signal's commit waited behind
it (bench/README.md). The writer holds the lock anyway: it records between its commits, an
outcome (RECORD_STEP, decoded then), then a few lanes (SETTLE_STEP), at a time, and ends its
transaction once a signal waits to be committed, as its routing does; each transaction's part
of a request is answered once committed (``framing.RECORDED``), so the delivery process knows
what is recorded whatever happens next. Recording again what was recorded (an answer lost when the
writer died) changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from alarmhub.store import framing, notification_sending, webhooks

RECORD_STEP = 1
"""Outcomes recorded at a time (a digest's carries every message it sent) ..."""
SETTLE_STEP = 4
"""... then lanes settled at a time."""


@dataclass(frozen=True, slots=True)
class Store:
    """A delivery channel's store, as the writer records into it."""

    decode: Callable[[dict[str, Any]], Any]
    record: Callable[[Connection, Sequence[Any], int], None]
    settle: Callable[[Connection, Collection[int]], set[int]]


STORES: dict[str, Store] = {
    webhooks.CHANNEL: Store(webhooks.Outcome.from_wire, webhooks.record, webhooks.settle),
    notification_sending.CHANNEL: Store(
        notification_sending.Outcome.from_wire,
        notification_sending.record,
        notification_sending.settle,
    ),
}


class Handed:
    """A request handed over (``framing.RECORD``), recorded step by step: its outcomes, then
    its lanes; what the transaction in progress has recorded, answered once it commits."""

    def __init__(self, origin: Any, message: dict[str, Any]) -> None:
        self.origin = origin  # the channel it came on, answered there
        self.request_id = int(message["id"])
        self._store = STORES[str(message[framing.RECORD])]
        # outcomes decoded a step at a time (a digest's carries its messages' texts)
        self._ended: list[tuple[int, dict[str, Any]]] = [
            (int(i), dict(o)) for i, o in message["ended"]
        ]
        self._lanes = [int(lane) for lane in message["lanes"]]
        self._recorded: list[int] = []
        self._settled: set[int] = set()

    @property
    def done(self) -> bool:
        return not self._ended and not self._lanes

    def step(self, conn: Connection, now_us: int) -> None:
        """Record the next few outcomes, or once they are all, settle the next few lanes."""
        if self._ended:
            group, self._ended = self._ended[:RECORD_STEP], self._ended[RECORD_STEP:]
            self._store.record(conn, [self._store.decode(fields) for _, fields in group], now_us)
            self._recorded += [delivery_id for delivery_id, _ in group]
        else:
            group_ids, self._lanes = self._lanes[:SETTLE_STEP], self._lanes[SETTLE_STEP:]
            self._settled |= self._store.settle(conn, group_ids)

    def answer(self, error: str | None = None) -> dict[str, Any]:
        """The answer for what the steps since the last answer recorded (with ``error``: they
        were rolled back, and the request ends)."""
        recorded, settled = ([], set()) if error else (self._recorded, self._settled)
        self._recorded, self._settled = [], set()
        return answer(self.request_id, recorded, settled, self.done or error is not None, error)


def answer(
    request_id: Any,
    recorded: Sequence[int] = (),
    settled: Collection[int] = (),
    done: bool = True,
    error: str | None = None,
) -> dict[str, Any]:
    """The writer's answer to request ``request_id`` (``framing.RECORDED``)."""
    return {framing.RECORDED: request_id, "outcomes": list(recorded),
            "lanes": sorted(settled), "done": done, "error": error}  # fmt: skip
