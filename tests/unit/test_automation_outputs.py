"""The automation outputs' supervisor (the outputs a node holds the lanes of, started, stopped
and reported) and ``output test``'s one link test, against the stand-in automation with the
in-memory store double."""

from __future__ import annotations

from dataclasses import replace

import pytest

from alarmhub.outbound.automation import link_test
from alarmhub.outbound.automation_outputs import AutomationOutputs
from tests.support.automation_sim import ACK, NAK, SILENT
from tests.support.output_store_double import (
    FakeDatabase,
    FakeStore,
    eventually,
    frames,
    run,
    settings,
    sim_at,
)
from tests.support.processes import free_port


@pytest.mark.parametrize(("mode", "said"), [(ACK, "ACK"), (NAK, "NAK"), (SILENT, "no answer")])
def test_output_test_sends_one_link_test_and_says_the_answer(mode: str, said: str) -> None:
    async def scenario() -> None:
        async with sim_at() as sim:
            sim.mode = mode
            output = settings(sim.address, ack_timeout_seconds=0.3)
            answer = await link_test(output)
            assert answer == ("no answer within 0.3 s" if mode == SILENT else said)
            assert sim.frames == [output.link_test()]

    run(scenario)


def test_output_test_goes_to_the_backup_when_the_primary_refuses() -> None:
    async def scenario() -> None:
        async with sim_at() as sim:
            output = settings(f"127.0.0.1:{free_port()}", sim.address)
            assert await link_test(output) == "ACK"
            closed = settings(f"127.0.0.1:{free_port()}")
            answer = await link_test(closed)
            assert closed.addresses[0] in answer and answer != "ACK"

    run(scenario)


# the supervisor --------------------------------------------------------------------------------


def test_the_supervisor_runs_the_outputs_it_holds_and_lets_go_of_them() -> None:
    async def scenario() -> None:
        async with sim_at() as sim:
            output = settings(sim.address)
            other = settings(sim.address, output_id=2, name="elsewhere")
            store = FakeStore(output, other)
            store.elsewhere.add(2)
            store.enqueue(1, frames(1)[0])
            store.enqueue(2, frames(1, first_zone=9)[0])
            outputs = AutomationOutputs(
                store, "node-1", database=FakeDatabase(), poll_seconds=0.05, report_seconds=0.05
            )
            await outputs.start()
            try:
                await eventually(lambda: store.delivered_ids == [1])
                assert set(outputs.running) == {1}
                await eventually(lambda: 1 in store.reports and store.reports[1].state == "up")
                assert store.reports[1].node == "node-1"
                store.elsewhere.add(1)  # its lease taken over
                await eventually(lambda: not outputs.running)
                store.elsewhere.clear()
                await eventually(lambda: set(outputs.running) == {1, 2})
                await eventually(lambda: store.delivered_ids == [1, 2])
                store.outputs[1] = replace(output, ack_timeout_seconds=3.0)  # changed
                await eventually(  # restarted with them: not running for a moment meanwhile
                    lambda: (
                        1 in outputs.running
                        and outputs.running[1].sender.settings == store.outputs[1]
                    )
                )
                del store.outputs[2]  # removed
                await eventually(lambda: set(outputs.running) == {1})
            finally:
                await outputs.stop()
            assert store.released == ["node-1"]
            assert not outputs.running

    run(scenario)


def test_a_lease_not_renewed_stops_its_sender_before_it_runs_out() -> None:
    async def scenario() -> None:
        async with sim_at() as sim:
            output = settings(sim.address)
            store = FakeStore(output)
            outputs = AutomationOutputs(
                store, "node-1", database=FakeDatabase(), poll_seconds=0.05, held_seconds=0.5
            )
            await outputs.start()
            try:
                await eventually(lambda: set(outputs.running) == {1})
                store.down = True
                await eventually(lambda: not outputs.running)
                store.enqueue(1, frames(1)[0])
                store.down = False
                await eventually(lambda: store.delivered_ids == [1])
            finally:
                await outputs.stop()

    run(scenario)


def test_a_lease_is_counted_from_before_it_was_asked_for_however_long_the_asking_takes() -> None:
    """The lease runs from the time the node took before asking for it: its sender's hold is
    counted from then too, not from the answer, or a renewal slow to commit would let the sender
    run past the lease while another node takes the output over (two sending at once)."""

    async def scenario() -> None:
        async with sim_at() as sim:
            store = FakeStore(settings(sim.address))
            store.hold_seconds = 0.2  # a commit that takes its time
            outputs = AutomationOutputs(store, "node-1", database=FakeDatabase())
            try:
                await outputs.follow()  # claimed
                await outputs.follow()  # renewed
                assert outputs.running[1].held_at <= store.holds[-1]
            finally:
                await outputs.stop()

    run(scenario)
