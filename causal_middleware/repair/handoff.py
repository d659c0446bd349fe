"""A bounded hand-over of finished run ids from the agent's thread to one daemon thread.

``submit`` never blocks: a full or closed hand-over drops the run and counts it. The daemon thread
calls ``_handle(run_id)`` for each; an error there is counted and reported to
:mod:`causal_middleware.spans.health`, never raised into the agent. Both ``on_failure`` targets
(:class:`~causal_middleware.repair.trigger.RepairQueue`, which repairs in-process, and
:class:`~causal_middleware.repair.enqueue.DurableEnqueuer`, which only enqueues) build on it.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Protocol

from causal_middleware.spans.health import health

_STOP = object()


class HandoffStats(Protocol):
    submitted: int
    dropped: int
    errors: int


class RunHandoff:
    """Subclasses set up what ``_handle`` needs, then call ``super().__init__`` (it starts the thread)."""

    def __init__(self, *, maxsize: int, stats: HandoffStats, thread_name: str, health_key: str) -> None:
        self.stats = stats
        self._health_key = health_key
        self._lock = threading.Lock()
        self._closed = False
        self._queue: queue.Queue[object] = queue.Queue(maxsize=maxsize)
        self._thread = threading.Thread(target=self._work, name=thread_name, daemon=True)
        self._thread.start()

    def submit(self, run_id: str) -> bool:
        """Hand a finished run over; never blocks. False (counted as dropped) when full or closed."""
        with self._lock:
            self.stats.submitted += 1
            if self._closed:
                self.stats.dropped += 1
                return False
        try:
            self._queue.put_nowait(run_id)
        except queue.Full:
            with self._lock:
                self.stats.dropped += 1
            return False
        return True

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until every submitted run has been handled; False when ``timeout`` ran out first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._queue.all_tasks_done:
            while self._queue.unfinished_tasks:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._queue.all_tasks_done.wait(left)
        return True

    @property
    def pending(self) -> int:
        return self._queue.qsize()

    def _close(self) -> bool:
        """Stop accepting runs; False when it was closed already."""
        with self._lock:
            if self._closed:
                return False
            self._closed = True
            return True

    def _stop_thread(self, timeout: float | None) -> bool:
        """Ask the thread to stop after what is queued; False when the queue stayed full."""
        try:
            self._queue.put(_STOP, timeout=timeout)
        except queue.Full:
            return False
        return True

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is _STOP:
                    return
                self._handle(str(item))
            except Exception as exc:  # fail-open: never let the thread die
                with self._lock:
                    self.stats.errors += 1
                health.record_error(self._health_key, exc)
            finally:
                self._queue.task_done()

    def _handle(self, run_id: str) -> None:
        raise NotImplementedError
