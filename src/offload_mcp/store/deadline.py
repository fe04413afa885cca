"""Ledger calls with a deadline: a stuck database costs a caller at most that deadline, never its thread.

How it works: each call runs in one of a few daemon worker threads owned by the ledger, and the
caller waits for it at most `deadline_s`. A call that has no answer by then raises the error the
caller gave (LedgerUnavailable for reads, LedgerWriteError for writes) with a reason a user can act
on; its worker stays with the database until it answers (a SIGSTOPped server answers only when it is
resumed, and the driver cannot be interrupted from another thread). While any call is past its
deadline (and past `stall_after_s`, so that a health probe that gives up early does not count) the
database counts as stalled: later calls fail at once instead of queueing behind it, so
a health check, a tools/list and every result of the other sessions answer in milliseconds. The
first call that completes after that clears the stall.

A call that had not started when its caller gave up never runs (`on_abandoned` tells its caller so);
one that had started may still complete later (a write then commits bytes nobody was shown, which
is harmless: ids derive from content).

Daemon threads, not `concurrent.futures`: its workers are joined at interpreter exit, so a proxy
could not exit while the database is stopped.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any, TypeVar

log = logging.getLogger(__name__)

_T = TypeVar("_T")


@dataclass(eq=False)
class _Task:
    run: Callable[[], Any]
    deadline_s: float
    future: Future[Any] = field(default_factory=Future)
    submitted_at: float = field(default_factory=time.monotonic)
    started_at: float | None = None


class DeadlineRunner:
    """Runs callables in at most `workers` daemon threads; callers wait at most a deadline each."""

    def __init__(self, workers: int, name: str, *, stall_after_s: float = 0.0) -> None:
        self._max_workers = max(1, workers)
        self._stall_after_s = stall_after_s
        self._name = name
        self._queue: queue.SimpleQueue[_Task | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._running: set[_Task] = set()
        self._closed = False

    def stalled_for(self) -> float | None:
        """Seconds the oldest call past its deadline has been waiting on the database, or None.

        Counted from when its caller asked, as the caller's deadline is: on a loaded machine a worker
        may start a call late, and a call its caller has given up on is late however late it began."""
        now = time.monotonic()
        with self._lock:
            late = [
                now - t.submitted_at
                for t in self._running
                if t.started_at is not None and now - t.submitted_at > max(t.deadline_s, self._stall_after_s)
            ]
        return max(late) if late else None

    def run(
        self,
        fn: Callable[[], _T],
        *,
        deadline_s: float,
        error: Callable[[str], Exception],
        what: str,
        on_abandoned: Callable[[], None] | None = None,
    ) -> _T:
        """`fn()`'s result, or `error(reason)` raised when it has none within `deadline_s` (at once
        while the database is stalled). Exceptions `fn` raises reach the caller unchanged."""
        if self._closed:
            return fn()  # the ledger is closing (an exit-time flush): its backend answers or says it is closed
        stalled = self.stalled_for()
        if stalled is not None:
            if on_abandoned is not None:
                on_abandoned()
            raise error(f"{what}: the database has not answered for {stalled:.1f}s (stalled); not waiting on it")
        task = _Task(fn, deadline_s)
        self._submit(task)
        try:
            return task.future.result(timeout=deadline_s)  # type: ignore[no-any-return]
        except FutureTimeout:
            if task.future.cancel() and on_abandoned is not None:
                on_abandoned()  # never started: nothing of it will run
            raise error(f"{what}: no answer from the database within {deadline_s:g}s") from None

    def close(self) -> None:
        """Let idle workers end; a worker stuck on the database ends when it answers (daemon: never waited for)."""
        with self._lock:
            self._closed = True
            count = len(self._threads)
        for _ in range(count):
            self._queue.put(None)

    def _submit(self, task: _Task) -> None:
        with self._lock:
            if self._idle == 0 and len(self._threads) < self._max_workers and not self._closed:
                thread = threading.Thread(target=self._work, name=f"{self._name}-{len(self._threads)}", daemon=True)
                self._threads.append(thread)
                thread.start()
            else:
                self._idle = max(0, self._idle - 1)
        self._queue.put(task)

    def _work(self) -> None:
        me = threading.current_thread()
        try:
            while True:
                task = self._queue.get()
                if task is None:
                    return
                if not task.future.set_running_or_notify_cancel():
                    self._became_idle()
                    continue
                with self._lock:
                    task.started_at = time.monotonic()
                    self._running.add(task)
                try:
                    task.future.set_result(task.run())
                except BaseException as err:  # handed to the caller, who decides what it means
                    task.future.set_exception(err)
                finally:
                    with self._lock:
                        self._running.discard(task)
                self._became_idle()
        finally:
            with self._lock:
                if me in self._threads:
                    self._threads.remove(me)

    def _became_idle(self) -> None:
        with self._lock:
            self._idle += 1
