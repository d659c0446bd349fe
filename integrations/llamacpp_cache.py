"""Recent llama.cpp KV states, keyed by the tokens they hold, to start a prompt from its longest cached prefix.

llama.cpp itself reuses only the prefix a prompt shares with the *last* one evaluated. Re-executing
a run's suffix (replay, repair validation) or alternating between prompt families goes back to
earlier prefixes; this cache keeps them. ``llama_cpp.LlamaRAMCache`` does the same but also copies
the Python-side logits buffer with every state (``n_batch x n_vocab`` floats: 311 MB for Qwen's
152k vocabulary, per call), which made it slower than no cache at all; here an entry is only the
sequence's KV cells (``llama_state_seq_get_data``: ~12 KB per token for Qwen 0.5B).
"""

from __future__ import annotations

import ctypes
from collections import OrderedDict
from typing import Any

import numpy as np

# Restoring costs ~20 ms; below this many extra reused tokens the in-context prefix is as good.
MIN_GAIN_TOKENS = 16


class PrefixStateCache:
    """LRU cache of sequence-0 states, at most ``capacity_bytes`` in all."""

    def __init__(self, capacity_bytes: int) -> None:
        self.capacity_bytes = capacity_bytes
        self._states: OrderedDict[bytes, tuple[np.ndarray, bytes]] = OrderedDict()
        self.size_bytes = 0

    def __len__(self) -> int:
        return len(self._states)

    def clear(self) -> None:
        self._states.clear()
        self.size_bytes = 0

    def longest(self, tokens: list[int]) -> tuple[bytes | None, int]:
        """(key, length) of the cached state sharing the longest prefix with ``tokens``."""
        best_key, best = None, 0
        wanted = np.asarray(tokens, dtype=np.intc)
        for key, (ids, _) in self._states.items():
            n = min(len(ids), len(wanted))
            mismatch = np.flatnonzero(ids[:n] != wanted[:n])
            shared = int(mismatch[0]) if mismatch.size else n
            if shared > best:
                best_key, best = key, shared
        return best_key, best

    def save(self, llama: Any) -> None:
        """Keep ``llama``'s current state (its evaluated tokens and their KV cells)."""
        import llama_cpp

        ids = np.array(llama._input_ids, dtype=np.intc)
        if ids.size == 0:
            return
        key = ids.tobytes()
        if key in self._states:
            self._states.move_to_end(key)
            return
        ctx = llama._ctx.ctx
        size = llama_cpp.llama_state_seq_get_size(ctx, 0)
        buffer = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_seq_get_data(ctx, buffer, size, 0)
        data = ctypes.string_at(buffer, written)
        if len(data) > self.capacity_bytes:
            return
        self._states[key] = (ids, data)
        self.size_bytes += len(data)
        while self.size_bytes > self.capacity_bytes:
            _, (_, dropped) = self._states.popitem(last=False)
            self.size_bytes -= len(dropped)

    def restore(self, llama: Any, key: bytes) -> bool:
        """Load the state ``key`` into ``llama``; False (and ``llama`` reset) when llama.cpp refuses it."""
        import llama_cpp

        ids, data = self._states[key]
        self._states.move_to_end(key)
        llama._ctx.kv_cache_clear()
        buffer = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        if llama_cpp.llama_state_seq_set_data(llama._ctx.ctx, buffer, len(data), 0) != len(data):
            llama.reset()
            return False
        llama.input_ids[: len(ids)] = ids
        llama.n_tokens = len(ids)
        llama._requires_eval = True  # logits are not part of the state: the next decode refreshes them
        return True
