"""Starting one store RPC call: at once, and as a task only if it has to wait.

On SQLite and memory most store calls never wait: the backend runs their unit
inline, on the event loop's thread (``emulator/sqlite/backend.py``), so the call's
coroutine returns on its first step. A task per call costs a Task, a turn of
the event loop before it starts, and its bookkeeping: about 8 us of a 40 us
round trip (measured with ``tests/bench/bench_node_profile.py``'s no-op
method). So an *eager* call runs its first step right here, where its request
line was read, and becomes a task only if that step waits (a write queued
for the SQLite thread, a retry's back-off): a task then goes on from where
the step stopped (:class:`_Continued`), as Python 3.12's eager tasks do.

Why that is safe, and when it is used:

* The first step runs in a context of its own, and the task that finishes the
  call runs in that same context, so a context variable set before the first
  wait is reset in the context that set it (the retry policy's ``_queued``).
* ``asyncio.current_task()`` is None during the first step, and code that
  needs a task there (``asyncio.timeout``, aiohttp's timers, anyio) would
  fail. The store's own code on the memory and SQLite backends asks for none
  (no timeouts: SQLite waits in its own thread), so only the store's methods
  on those backends run eagerly (:func:`runs_inline`, decided by
  :func:`.server.start_store_rpc`); PostgreSQL's pool (``asyncio.timeout``),
  S3 (aiohttp) and the runtime's other handlers (kv, tools, tracer) always get
  a task, and they wait on the network or a process anyway.
* Nothing is held longer than before: a task ran the same first step on the
  same loop, just one turn later, and one that waits no longer holds the
  others than a task did. Inline units that follow one another yield to the
  loop after 4 ms (``emulator/sqlite/backend.py``, ``HOLD_BUDGET``), so a long
  pipelined batch still lets the loop run. The store's calls start in the
  order their lines arrived, as before; a call of another kind (kv, tools)
  starts one turn later than a store call read after it, which nothing
  orders on (they touch different things, and a client that needs one before
  the other awaits it first).
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any

from makers_store import ContextStore


class Done:
    """A finished call: its result, or the exception it raised."""

    __slots__ = ("error", "result")

    def __init__(self, result: Any = None, error: BaseException | None = None) -> None:
        self.result = result
        self.error = error

    @classmethod
    def of_error(cls, error: BaseException) -> Done:
        return cls(None, error)


Finish = Callable[[Done], None]


def runs_inline(store: ContextStore) -> bool:
    """Whether ``store``'s backend runs units on the caller's thread, asking for
    no current task: memory (and its stepwise variant) and SQLite."""
    from makers_store.emulator.memory.backend import (
        MemoryBlobStore,
        StepwiseMemoryBlobStore,
    )
    from makers_store.emulator.sqlite.backend import SqliteBlobStore

    return isinstance(store.blobs, MemoryBlobStore | StepwiseMemoryBlobStore | SqliteBlobStore)


class _Continued(Coroutine[Any, None, Any]):
    """The rest of a coroutine whose first step ran outside a task, as the
    coroutine of the task that goes on with it. The task's first step gets
    what the coroutine's first step yielded (a future to wait on, or None for
    one turn of the loop), so the task waits exactly as if it had run that
    step itself; then every send and throw (a cancellation, even one before
    the task's first step) goes to the coroutine where it stopped, so its
    ``except`` and ``finally`` run inside the task."""

    def __init__(self, coroutine: Coroutine[Any, Any, Any], waiting_on: Any) -> None:
        self._coroutine = coroutine
        self._waiting_on = waiting_on
        self._first = True

    def send(self, value: None) -> Any:
        if self._first:
            self._first = False
            return self._waiting_on
        return self._coroutine.send(value)

    def throw(self, *error: Any) -> Any:
        self._first = False
        return self._coroutine.throw(*error)

    def close(self) -> None:
        self._coroutine.close()

    def __await__(self) -> Generator[Any, None, Any]:
        return self._coroutine.__await__()


def _finished(task: asyncio.Future[Any], finish: Finish) -> None:
    if task.cancelled():
        return  # the connection ended: nobody waits for this answer
    error = task.exception()
    finish(Done.of_error(error) if error is not None else Done(task.result()))


def start(coroutine: Awaitable[Any], finish: Finish, *, eager: bool) -> asyncio.Future[Any] | None:
    """Run ``coroutine`` (a handler's) and pass its outcome to ``finish``. ``eager``: its first
    step runs now, and a call that finishes there is answered before this
    returns (None). Otherwise (or when it waits) the task that finishes it is
    returned; cancelling that task cancels the call inside its handler, and
    ``finish`` is not called."""
    loop = asyncio.get_running_loop()
    task: asyncio.Future[Any]
    if eager and isinstance(coroutine, Coroutine):
        context = contextvars.copy_context()
        try:
            waiting_on = context.run(coroutine.send, None)
        except StopIteration as done:
            finish(Done(done.value))
            return None
        except (Exception, asyncio.CancelledError) as exc:  # the caller still waits: answer it
            finish(Done.of_error(exc))
            return None
        task = loop.create_task(_Continued(coroutine, waiting_on), context=context)
    else:
        task = asyncio.ensure_future(coroutine)
    task.add_done_callback(lambda done: _finished(done, finish))
    return task
