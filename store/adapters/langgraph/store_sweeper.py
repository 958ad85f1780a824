"""Where the LangGraph store's TTL sweeper task runs and how it stops, for
the one ``start_ttl_sweeper`` / ``stop_ttl_sweeper`` that serves both of
LangGraph's call styles (an asyncio task on a running loop; a thread-safe
future from synchronous code)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib


def running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


async def stopped(task: asyncio.Task[None] | None, timeout: float | None) -> bool:  # noqa: ASYNC109
    """Cancel the sweeper ``task`` (on its own loop) and wait up to ``timeout``."""
    if task is None or task.done():
        return True
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, TimeoutError):
        await asyncio.wait_for(asyncio.shield(task), timeout)
    return task.done()


async def waited(stopping: asyncio.Future[bool], timeout: float | None) -> bool:  # noqa: ASYNC109
    try:
        return await asyncio.wait_for(stopping, timeout)
    except TimeoutError:
        return False


def follow(task: asyncio.Task[None]) -> concurrent.futures.Future[None]:
    """A thread-safe future that ends with the sweeper ``task``; cancelling it
    cancels the task (as cancelling SqliteStore's sweeper future stops it)."""
    future: concurrent.futures.Future[None] = concurrent.futures.Future()
    loop = task.get_loop()

    def task_done(_: asyncio.Task[None]) -> None:
        if not future.done():
            future.set_result(None)

    def future_done(done: concurrent.futures.Future[None]) -> None:
        if done.cancelled():
            loop.call_soon_threadsafe(task.cancel)

    loop.call_soon_threadsafe(task.add_done_callback, task_done)
    future.add_done_callback(future_done)
    return future
