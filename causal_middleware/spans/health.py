"""Fail-open bookkeeping: errors swallowed inside instrumentation, export or the store.

The middleware never raises into the user's agent run; instead every swallowed error is logged
once per site and counted here, so users (and tests) can see that something went wrong.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter

logger = logging.getLogger("causal_middleware")


class Health:
    """Thread-safe counters of swallowed errors, keyed by site (``handler.on_llm_end``, ...)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._errors: Counter[str] = Counter()
        self._last: dict[str, str] = {}

    def record_error(self, site: str, exc: BaseException | None = None) -> None:
        with self._lock:
            first = self._errors[site] == 0
            self._errors[site] += 1
            if exc is not None:
                self._last[site] = f"{type(exc).__name__}: {exc}"
        if first:
            logger.warning("causal-middleware swallowed an error at %s (fail-open)", site, exc_info=exc)
        else:
            logger.debug("causal-middleware swallowed an error at %s", site, exc_info=exc)

    @property
    def errors(self) -> dict[str, int]:
        with self._lock:
            return dict(self._errors)

    @property
    def total_errors(self) -> int:
        with self._lock:
            return sum(self._errors.values())

    def last_error(self, site: str) -> str | None:
        with self._lock:
            return self._last.get(site)

    def reset(self) -> None:
        with self._lock:
            self._errors.clear()
            self._last.clear()


health = Health()
