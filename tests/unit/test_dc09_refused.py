"""A DC-09 frame whose events cannot be stored is answered NAK (decisions §14), never ACK and
never left without an answer: the writer refusing at once, and a commit that fails or is
overdue (the writer's future failing). The receiver's own module with a writer double; the
fault tests show the same through a real node (tests/e2e/test_database_faults.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from my_dc09_spt.msg.dc05_msg import dc05_msg
from my_dc09_spt.msg.dc09_msg import dc09_msg

from alarmhub.core.errors import StoreUnavailable
from alarmhub.core.signal import Signal
from alarmhub.dc09 import frame, receiver
from alarmhub.dc09.receiver import Reply
from alarmhub.dc09.server import Receiver
from alarmhub.store.commit import Stored


class Accounts:
    """The two things :meth:`Receiver.accept` asks of the account book."""

    def dnis_of(self, receiver_number: int | None, line_number: int | None) -> str:
        return "1234"

    def reported(self, account: str, receiver_number: int | None, line: int | None) -> None:
        pass


class RefusingWriter:
    """Refuses every signal at once (the writer restarting, or new signals refused while a
    commit is overdue), or, with ``later``, fails each future on the next turn of the loop
    (a commit that failed or was not completed within ``store_commit_timeout``)."""

    def __init__(self, later: bool) -> None:
        self.later = later

    def enqueue(self, sig: Signal, /) -> asyncio.Future[Stored]:
        if not self.later:
            raise StoreUnavailable("the writer is restarting")
        future: asyncio.Future[Stored] = asyncio.get_running_loop().create_future()
        error = StoreUnavailable("commit not completed within 2 s")
        asyncio.get_running_loop().call_soon(future.set_exception, error)
        return future

    async def run(self, work: Callable[[Any], Any], /) -> Any:
        raise StoreUnavailable("not used")


def answer_to_an_event(later: bool) -> bytes | None:
    event = dc05_msg.dc05event("1234", {"code": "130", "zone": 3})
    wire = dc09_msg("1234", line=0).dc09block(7, "ADM-CID", event).encode()
    frames, _ = frame.split(bytearray(wire))
    decision = receiver.decide(frames[0], lambda account: None)
    assert decision.reply is Reply.ACK and decision.events

    async def scenario() -> bytes | None:
        dc09 = Receiver(
            Accounts(),  # type: ignore[arg-type]
            RefusingWriter(later),
            [],
            max_connections=1,
            max_per_address=1,
            idle_seconds=5,
        )
        answered = dc09.accept(decision, "127.0.0.1:1")
        assert isinstance(answered, asyncio.Future)
        return await asyncio.wait_for(answered, 5)

    return asyncio.run(scenario())


def test_a_frame_the_writer_refuses_at_once_is_answered_nak() -> None:
    answered = answer_to_an_event(later=False)
    assert answered is not None and answered[9:14] == b'"NAK"', answered


def test_a_frame_whose_commit_fails_is_answered_nak_with_the_receivers_time() -> None:
    answered = answer_to_an_event(later=True)
    assert answered is not None, "left without an answer"
    body = answered[9:-1]
    assert body.startswith(b'"NAK"0000R0L0A0[]_'), answered
    assert frame.split(bytearray(answered))[0][0].valid()  # CRC and length right
