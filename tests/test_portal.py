"""The portal that blocking stores run on: Ctrl-C cancels the running call
and waits for it to end before KeyboardInterrupt goes on; an iterator walked
through it is closed on the portal's loop when abandoned."""

from __future__ import annotations

import _thread
import asyncio
import signal
import threading
from collections.abc import AsyncIterator

import pytest

from makers_store import Portal


def test_ctrl_c_cancels_the_call_and_waits_for_it_to_end() -> None:
    portal = Portal()
    events: list[str] = []
    started = threading.Event()

    async def slow() -> None:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            await asyncio.sleep(0.2)  # the unit winds down: the caller must wait for it
            events.append("cancelled and finished")
            raise

    timer = threading.Thread(target=lambda: started.wait(5) and _thread.interrupt_main())
    # A suite started with SIGINT ignored (nohup, `cmd &`) passes that on, and
    # interrupt_main() then does nothing: give SIGINT Python's own handler here.
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            portal.call(slow())
        assert events == ["cancelled and finished"]  # before KeyboardInterrupt reached us
        assert portal.interrupted
        assert portal.call(asyncio.sleep(0, "still usable")) == "still usable"
    finally:
        timer.join()
        portal.stop()
        signal.signal(signal.SIGINT, inherited)


def test_an_abandoned_walk_is_closed_on_the_portal() -> None:
    portal = Portal()
    closed: list[bool] = []

    async def numbers() -> AsyncIterator[int]:
        try:
            for n in range(1_000):
                yield n
        finally:
            closed.append(asyncio.get_running_loop() is not None)

    try:
        walk = portal.iterate(numbers())
        assert [next(walk), next(walk)] == [0, 1]
        walk.close()
        assert closed == [True] and not portal.interrupted
        assert list(portal.iterate(numbers()))[-1] == 999 and closed == [True, True]
    finally:
        portal.stop()
