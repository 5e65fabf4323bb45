"""The delivery process's channel to its node's writer (SQLite): how deliveries ended, handed
over to be recorded there (:mod:`alarmhub.store.recording`) rather than in transactions of this
process's own, which held the database's one write lock while a signal's commit waited.

It connects to the writer's Unix socket (the one the node's workers use) when first needed and
again after the writer's channel closed (the node starts a writer that died again, at the same
address); a request whose channel closed, or that was not answered within ``answer_seconds``,
fails (:class:`NotRecorded`): the worker tries again with what was not answered as recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Sequence
from typing import Any

from alarmhub.outbound.delivery import Recorded
from alarmhub.store import framing

log = logging.getLogger("alarmhub.delivery")
CONNECT_SECONDS = 5.0
REQUEST_OUTCOMES = 16
REQUEST_LANES = 256
Answers = asyncio.Queue[dict[str, Any] | None]
"""A request's answers, as they arrive (None: its connection closed)."""


class NotRecorded(Exception):
    """The writer did not record (all of) a request: its channel closed, it did not answer in
    time, or its transaction failed."""


class WriterRecords:
    """Hands requests to the writer at ``address``, one connection for every channel's worker;
    :meth:`close` at the process's end."""

    def __init__(self, address: str, answer_seconds: float) -> None:
        self._address = address
        self._answer_seconds = answer_seconds
        self._writer: asyncio.StreamWriter | None = None
        self._reading: asyncio.Task[None] | None = None
        # each request waiting: the connection it went on, and where its answers arrive
        self._answers: dict[int, tuple[asyncio.StreamWriter, Answers]] = {}
        self._ids = itertools.count(1)
        self._connecting = asyncio.Lock()

    async def record(
        self,
        channel: str,
        ended: Sequence[tuple[int, Any]],
        lane_ids: Sequence[int],
        done: Recorded,
    ) -> None:
        """Have the writer record ``ended`` (delivery id and outcome) of ``channel``, then
        settle ``lane_ids``, in requests of REQUEST_OUTCOMES and REQUEST_LANES at most (a
        digest's outcome carries the texts of the messages it sent); what each of the writer's
        transactions committed is added to ``done`` as it is answered (:class:`NotRecorded`
        for the rest)."""
        for start in range(0, len(ended), REQUEST_OUTCOMES):
            await self._request(channel, ended[start : start + REQUEST_OUTCOMES], (), done)
        for start in range(0, len(lane_ids), REQUEST_LANES):
            await self._request(channel, (), lane_ids[start : start + REQUEST_LANES], done)

    async def _request(
        self,
        channel: str,
        ended: Sequence[tuple[int, Any]],
        lane_ids: Sequence[int],
        done: Recorded,
    ) -> None:
        writer = await self._connected()
        request_id = next(self._ids)
        answers: Answers = asyncio.Queue()
        self._answers[request_id] = (writer, answers)
        try:
            writer.write(framing.encode({framing.RECORD: channel, "id": request_id,
                                         "ended": ended, "lanes": lane_ids}))  # fmt: skip
            while True:
                try:  # asyncio.timeout, not wait_for: a cancel as the answer comes is kept
                    async with asyncio.timeout(self._answer_seconds):
                        answer = await answers.get()
                except TimeoutError:
                    raise NotRecorded(f"no answer within {self._answer_seconds:g} s") from None
                if answer is None:
                    raise NotRecorded("the writer's channel closed")
                done.outcomes.update(answer["outcomes"])
                done.lanes.update(answer["lanes"])
                if answer.get("error"):
                    raise NotRecorded(answer["error"])
                if answer["done"]:
                    return
        finally:
            self._answers.pop(request_id, None)

    async def _connected(self) -> asyncio.StreamWriter:
        async with self._connecting:
            if self._writer is None or self._writer.is_closing():
                try:
                    async with asyncio.timeout(CONNECT_SECONDS):
                        reader, writer = await asyncio.open_unix_connection(self._address)
                    async with asyncio.timeout(CONNECT_SECONDS):
                        first = await _frame(reader)
                except (OSError, TimeoutError, asyncio.IncompleteReadError) as exc:
                    raise NotRecorded(f"the writer is not reachable: {exc!r}") from None
                if not isinstance(first, dict) or not first.get("ready"):
                    writer.close()
                    raise NotRecorded("the writer did not greet")
                self._writer = writer
                reading = self._read(reader, writer)
                self._reading = asyncio.create_task(reading, name="writer answers")
                log.debug("connected to the writer", extra={"address": self._address})
            return self._writer

    async def _read(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Hand each answer to its request (other frames, notices for the node's senders, are
        not for this process); at the end, tell every request waiting on this connection that
        it closed."""
        try:
            while True:
                message = await _frame(reader)
                if isinstance(message, dict) and framing.RECORDED in message:
                    _, answers = self._answers.get(message[framing.RECORDED], (None, None))
                    if answers is not None:
                        answers.put_nowait(message)
        except (OSError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            writer.close()
            for sent_on, answers in self._answers.values():
                if sent_on is writer:
                    answers.put_nowait(None)

    async def close(self) -> None:
        if self._reading is not None:
            self._reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reading
        if self._writer is not None:
            self._writer.close()


async def _frame(reader: asyncio.StreamReader) -> Any:
    """The next frame read (``framing``); IncompleteReadError at the end of the stream."""
    header = await reader.readexactly(framing.HEADER.size)
    (length,) = framing.HEADER.unpack(header)
    if length > framing.MAX_FRAME:
        raise ValueError(f"frame of {length} bytes is too large")
    buffer = bytearray(header + await reader.readexactly(length))
    return framing.decode_all(buffer)[0]
